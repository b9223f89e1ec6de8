import BearerCore
import BearerHTTP
import BearerSession

/// Events of the request in flight: the token, the upstream connection, the body both ways.
extension ClientConnectionStateMachine {
    // MARK: The replay budget

    /// The connection reserved (`granted`) or could not reserve `bytes` of the replay budget that
    /// `reserveReplayBody` asked for, to keep more of a growing (chunked) body.
    mutating func replayBodyReserved(_ bytes: Int, granted: Bool, now: Instant) -> Action {
        self.modifyExchange { _, exchange in
            switch exchange.phase {
            case .sent:
                // More room for a growing (chunked) body.
                guard case .kept(let kept, let reserved) = exchange.body else {
                    preconditionFailure("Invalid body copy for a reservation: \(exchange.body)")
                }
                exchange.body = .lost  // no second reference while `kept` is moved
                if granted {
                    exchange.body = .kept(kept, reserved: reserved + bytes)
                    return .none
                }
                return .releaseReplayBody(reserved)
            case .routed, .waitingForToken, .connecting:
                preconditionFailure("Invalid phase for a reservation: \(exchange.phase)")
            }
        } ?? { preconditionFailure("Invalid state for a reservation: \(self.state)") }()
    }

    // MARK: The token

    /// The session's port answered at once (`requestToken`), and the connection `reserved` that much
    /// of the replay budget for a Content-Length body it asked for (0: none, or refused: the body is
    /// forwarded without a copy).
    mutating func tokenAnswered(_ answer: TokenAnswer, reserved: Int = 0, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .routed = exchange.phase else { preconditionFailure("Invalid phase: \(exchange.phase)") }
            if reserved > 0 { exchange.body = .kept(ByteBuffer(), reserved: reserved) }
            return machine.follow(answer, &exchange, now: now)
        } ?? { preconditionFailure("Invalid state for a token answer: \(self.state)") }()
    }

    /// The session told the request waiting with `ticket` how its wait ended (later, on this loop).
    mutating func tokenReady(_ ticket: Ticket, _ answer: TokenAnswer, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .waitingForToken(let waiting, _) = exchange.phase, waiting == ticket else { return .none }
            return machine.follow(answer, &exchange, now: now)
        } ?? .none
    }

    /// What the exchange does with the session's answer: send (again, after a refusal: a replay),
    /// wait, or answer the client.
    private mutating func follow(_ answer: TokenAnswer, _ exchange: inout Exchange, now: Instant) -> Action {
        switch answer {
        case .send(let token):
            exchange.token = token
            exchange.phase = .connecting
            if exchange.isReplay { return .replay(exchange.target.origin) }
            return .connectUpstream(exchange.target.origin, allowReuse: true)
        case .wait(let ticket):
            exchange.phase = .waitingForToken(ticket, since: now)
            exchange.hasWaitedForToken = true
            return .none
        case .fail(let failure):
            exchange.phase = .connecting
            return self.answerLocally(exchange, .session(failure), closes: false)
        case .passThrough:
            preconditionFailure("Invalid answer for a request: only a refusal passes through")
        }
    }

    // MARK: The upstream connection

    /// An upstream connection is ready (pooled, or just made): send the request on it.
    mutating func upstreamReady(isReused: Bool, now: Instant) -> Action {
        self.modifyExchange { _, exchange in
            guard case .connecting = exchange.phase else { preconditionFailure("Invalid phase: \(exchange.phase)") }
            exchange.attempts += 1
            exchange.phase = .sent(.init(response: .awaitingHead, lastActivity: now, isReusedConnection: isReused))
            // An empty copy is not taken out: its nil storage was retained and released all the same.
            let keptBytes = exchange.keptBodyBytes
            var kept = ByteBuffer()
            if keptBytes > 0, case .kept(let bytes, _) = exchange.body { kept = bytes }
            exchange.forwardedBodyBytes = keptBytes
            return .sendRequest(
                RequestToSend(
                    head: exchange.head,
                    target: exchange.target,
                    path: exchange.path,
                    authorization: exchange.token?.line,
                    keptBody: kept,
                    endsChunkedBody: exchange.isRequestComplete && exchange.head.framing == .chunked,
                    spent: exchange.hasWaitedForToken || exchange.isReplay ? now - exchange.startedAt : nil
                )
            )
        } ?? { preconditionFailure("Invalid state for a ready upstream: \(self.state)") }()
    }

    /// No upstream connection could be made.
    mutating func upstreamConnectFailed(_ error: ProxyError) -> Action {
        self.modifyExchange { machine, exchange in
            machine.answerLocally(exchange, error, closes: false)
        } ?? .none
    }

    /// The upstream connection ended before the response did: it sent its last byte, closed or
    /// reset. `endsResponse`: the response is close-delimited, so this ends it properly.
    /// `sentNothing`: not a byte of the request reached the connection. `tlsFailure`: TLS ended it
    /// (an alert: a server that wants a client certificate ends the connection so under TLS 1.3).
    mutating func upstreamEnded(
        endsResponse: Bool,
        sentNothing: Bool,
        reset: Bool,
        tlsFailure: String? = nil,
        now: Instant
    ) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .sent(let sent) = exchange.phase else { return .none }
            switch sent.response {
            case .streaming(let status, let framing, _, let bodyBytes):
                if endsResponse {
                    return machine.finish(exchange, status, framing, bodyBytes, poolsUpstream: false, now: now)
                }
                // Part of the response is out: cut the client's connection so it sees a truncated
                // response (a missing last chunk or a short body), never a complete-looking one.
                return machine.abort(exchange, reason: "upstream ended mid-response")
            case .refused:
                preconditionFailure("Invalid phase: the token session answers a refusal at once")
            case .awaitingHead:
                // A pooled connection the upstream closed while idle: the request may not have
                // reached it. Send again only when that cannot act twice (RFC 9110 §9.2.2).
                let mayResend =
                    sent.isReusedConnection && exchange.attempts < 3 && exchange.isReplayable
                    && (sentNothing || exchange.head.isSafeToResend)
                if mayResend {
                    exchange.phase = .connecting
                    return .connectUpstream(exchange.target.origin, allowReuse: false)
                }
                let origin = exchange.target.origin.description
                let error: ProxyError =
                    if let tlsFailure {
                        .upstreamTLSFailed(origin: origin, reason: tlsFailure)
                    } else {
                        reset ? .upstreamReset(origin: origin) : .upstreamClosed(origin: origin)
                    }
                return machine.answerLocally(exchange, error, closes: false)
            }
        } ?? self.relayUpstreamEnded(closed: reset)
    }

    /// The upstream sent bytes that are not a valid response.
    mutating func upstreamResponseMalformed(_ error: HTTPParseError) -> Action {
        self.modifyExchange { machine, exchange in
            let origin = exchange.target.origin.description
            return machine.answerLocally(exchange, .upstreamMalformed(origin: origin, error), closes: false)
        } ?? .none
    }

    // MARK: The request body

    /// Body bytes of the current request were parsed; they are forwarded, and kept while the
    /// request may have to be sent again: bodies up to replay_body_limit, within the proxy-wide
    /// replay_memory_limit (chunked bodies reserve 64 KiB at a time).
    ///
    /// When the copy needs more of the budget first, or has to be given up, the answer is
    /// `reserveReplayBody` or `releaseReplayBody` and the bytes are not taken yet: the connection
    /// performs it and reports the same bytes again.
    mutating func requestBodyReceived(_ bytes: UnsafeRawBufferPointer, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .sent(var sent) = exchange.phase, !exchange.isRequestComplete else {
                preconditionFailure("Invalid phase for body bytes: \(exchange.phase)")
            }
            if case .kept(var kept, let reserved) = exchange.body {
                let needed = kept.readableBytes + bytes.count
                if needed > exchange.target.tokenSession?.replayBodyLimit ?? 0 {
                    exchange.body = .lost
                    return .releaseReplayBody(reserved)
                }
                if needed > reserved { return .reserveReplayBody(max(needed - reserved, 64 * 1024)) }
                exchange.body = .lost  // no second reference while `kept` grows
                kept.writeBytes(bytes)
                exchange.body = .kept(kept, reserved: reserved)
            } else {
                exchange.body = .lost
            }
            exchange.forwardedBodyBytes += bytes.count
            sent.lastActivity = now
            exchange.phase = .sent(sent)
            return .forwardRequestBody(chunked: exchange.head.framing == .chunked)
        } ?? { preconditionFailure("Invalid state for body bytes: \(self.state)") }()
    }

    /// The request body is complete.
    mutating func requestEnded(now: Instant) -> Action {
        self.modifyExchange { _, exchange in
            guard case .sent(var sent) = exchange.phase else { preconditionFailure("Invalid phase: \(exchange.phase)") }
            exchange.isRequestComplete = true
            // From now on the upstream's silence is what is timed.
            sent.lastActivity = now
            exchange.phase = .sent(sent)
            return .endRequestBody(chunked: exchange.head.framing == .chunked)
        } ?? { preconditionFailure("Invalid state for the end of a body: \(self.state)") }()
    }

    // MARK: The response

    /// A 1xx head arrived: relayed to HTTP/1.1 clients; a 101 switches a WebSocket request to a relay.
    mutating func informationalReceived(_ head: ResponseHead, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .sent(var sent) = exchange.phase else { preconditionFailure("Invalid phase: \(exchange.phase)") }
            sent.lastActivity = now
            exchange.phase = .sent(sent)
            if head.status == 101 {
                guard exchange.head.upgradesToWebSocket else {
                    // Only WebSocket upgrades are forwarded: a switch nobody asked for is the upstream's mistake.
                    let error = ProxyError.upstreamMalformed(
                        origin: exchange.target.origin.description,
                        .invalidStatusLine
                    )
                    return machine.answerLocally(exchange, error, closes: true)
                }
                let record = exchange.record
                machine.state = .relay(Relay(kind: .webSocket(exchange.target.origin), record: record, now: now))
                return .switchProtocols(
                    head,
                    record,
                    accepted: exchange.acceptedToken,
                    releasesReplayBytes: exchange.reservedReplayBytes
                )
            }
            guard exchange.head.version == .http11 else { return .none }
            return .writeInformational(head)
        } ?? { preconditionFailure("Invalid state for a response head: \(self.state)") }()
    }

    /// The final response head arrived. A refresh_on status (401), or a Trailers-Only gRPC
    /// UNAUTHENTICATED, to a request that carried the token goes to the token session before the
    /// client sees anything.
    mutating func responseHeadReceived(_ head: ResponseHead, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .sent(var sent) = exchange.phase, case .awaitingHead = sent.response else {
                preconditionFailure("Invalid phase for a response head: \(exchange.phase)")
            }
            sent.lastActivity = now
            var dpopNonce: DPoPNonceUpdate?
            // The generation, not the token: a copy of the token held across these checks was a
            // retain and a release of its line per response.
            if let generation = exchange.token?.generation {
                // The plain bearer path pays this one look at the line's scheme, nothing more.
                if exchange.carriesDPoPBoundToken, let prover = exchange.target.tokenSession?.dpop {
                    dpopNonce = head.value(of: "dpop-nonce").map {
                        DPoPNonceUpdate(prover: prover, origin: exchange.target.origin, nonce: $0)
                    }
                    if head.status == 401, head.asksForDPoPNonce {
                        exchange.phase = .sent(sent)
                        // A nonce challenge is not an expiry (RFC 9449 §9): no refresh, one retry with the nonce.
                        guard let dpopNonce, !exchange.hasRetriedForNonce, exchange.isReplayable else {
                            return machine.forwardResponseHead(head, &exchange, accepted: nil, dpopNonce: dpopNonce)
                        }
                        exchange.hasRetriedForNonce = true
                        exchange.phase = .connecting
                        return .discardResponse(
                            reusable: exchange.leavesConnectionReusable(after: head),
                            next: .retryWithDPoPNonce(dpopNonce)
                        )
                    }
                }
                if let session = exchange.target.tokenSession, session.refusesToken(head) {
                    exchange.phase = .sent(sent)
                    // A request is replayed once: the refusal of its replay is its client's answer.
                    if exchange.isReplay {
                        return machine.forwardResponseHead(head, &exchange, accepted: nil, refused: true)
                    }
                    sent.response = .refused(head)
                    exchange.phase = .sent(sent)
                    return .reportRejection(session, generation: generation, canWait: exchange.isReplayable)
                }
            }
            exchange.phase = .sent(sent)
            return machine.forwardResponseHead(head, &exchange, accepted: exchange.acceptedToken, dpopNonce: dpopNonce)
        } ?? { preconditionFailure("Invalid state for a response head: \(self.state)") }()
    }

    /// The session's port decided about a refused token (`reportRejection`).
    mutating func rejectionAnswered(_ answer: TokenAnswer, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .sent(var sent) = exchange.phase, case .refused(let head) = sent.response else {
                preconditionFailure("Invalid phase for a rejection answer: \(exchange.phase)")
            }
            let reusable = exchange.leavesConnectionReusable(after: head)
            switch answer {
            case .passThrough:
                sent.response = .awaitingHead
                exchange.phase = .sent(sent)
                return machine.forwardResponseHead(head, &exchange, accepted: nil)
            case .send(let token):
                exchange.token = token
                exchange.isReplay = true
                exchange.phase = .connecting
                return .discardResponse(reusable: reusable, next: .replay(exchange.target.origin))
            case .wait(let ticket):
                exchange.isReplay = true
                exchange.phase = .waitingForToken(ticket, since: now)
                exchange.hasWaitedForToken = true
                return .discardResponse(reusable: reusable, next: .wait)
            case .fail(let failure):
                // The refused response is not read further: its upstream connection closes with the exchange.
                return machine.answerLocally(exchange, .session(failure), closes: false)
            }
        } ?? { preconditionFailure("Invalid state for a rejection answer: \(self.state)") }()
    }

    /// `refused`: the upstream refused a replay's token (a status in refresh_on): counted as a
    /// refusal here, since no `reportRejection` counted it.
    private mutating func forwardResponseHead(
        _ head: ResponseHead,
        _ exchange: inout Exchange,
        accepted: AcceptedToken?,
        dpopNonce: DPoPNonceUpdate? = nil,
        refused: Bool = false
    ) -> Action {
        guard case .sent(var sent) = exchange.phase else { preconditionFailure("Invalid phase: \(exchange.phase)") }
        // The status is known: the body copy is no longer needed.
        let released = exchange.dropBodyCopy()
        let version = exchange.head.version
        let framing: ClientFraming
        switch head.framing(requestMethod: exchange.head.method) {
        case .none: framing = .none
        case .contentLength(let length): framing = .contentLength(length)
        case .chunked, .untilClose: framing = version == .http11 ? .chunked : .closeDelimited
        }
        // A body the client is still sending when the answer comes cannot be skipped safely.
        if framing == .closeDelimited || !exchange.isRequestComplete { exchange.closesConnection = true }
        sent.response = .streaming(
            status: head.status,
            framing: framing,
            upstreamKeepsAlive: head.allowsReuse,
            bodyBytes: 0
        )
        exchange.phase = .sent(sent)
        return .forwardResponseHead(
            ResponseToForward(
                head: head,
                framing: framing,
                keepAlive: !exchange.closesConnection,
                clientVersion: version,
                accepted: accepted,
                releasesReplayBytes: released,
                dpopNonce: dpopNonce,
                refusalOf: refused ? exchange.target.session : nil
            )
        )
    }

    /// Response body bytes were parsed; they go to the client.
    mutating func responseBodyReceived(count: Int, now: Instant) -> Action {
        self.modifyExchange { _, exchange in
            guard case .sent(var sent) = exchange.phase,
                case .streaming(let status, let framing, let keepsAlive, let bodyBytes) = sent.response
            else { preconditionFailure("Invalid phase for response body bytes: \(exchange.phase)") }
            sent.response = .streaming(
                status: status,
                framing: framing,
                upstreamKeepsAlive: keepsAlive,
                bodyBytes: bodyBytes + count
            )
            sent.lastActivity = now
            exchange.phase = .sent(sent)
            return .forwardResponseBody(chunked: framing == .chunked)
        } ?? { preconditionFailure("Invalid state for response body bytes: \(self.state)") }()
    }

    /// The response is complete. `upstreamSentMore`: bytes after it arrived (the connection cannot be
    /// pooled).
    mutating func responseEnded(upstreamSentMore: Bool, now: Instant) -> Action {
        self.modifyExchange { machine, exchange in
            guard case .sent(let sent) = exchange.phase,
                case .streaming(let status, let framing, let keepsAlive, let bodyBytes) = sent.response
            else { preconditionFailure("Invalid phase for the end of a response: \(exchange.phase)") }
            let pools = keepsAlive && exchange.isRequestComplete && !upstreamSentMore
            return machine.finish(exchange, status, framing, bodyBytes, poolsUpstream: pools, now: now)
        } ?? { preconditionFailure("Invalid state for the end of a response: \(self.state)") }()
    }

    private mutating func finish(
        _ exchange: Exchange,
        _ status: Int,
        _ framing: ClientFraming,
        _ bodyBytes: Int,
        poolsUpstream: Bool,
        now: Instant
    ) -> Action {
        self.state = exchange.closesConnection ? .closing : .idle(since: now)
        return .finishExchange(
            ExchangeEnd(
                record: exchange.record,
                status: status,
                bodyBytes: bodyBytes,
                replayed: exchange.isReplay,
                writesChunkedEnd: framing == .chunked,
                poolsUpstream: poolsUpstream,
                closesConnection: exchange.closesConnection,
                releasesReplayBytes: exchange.reservedReplayBytes
            )
        )
    }

    // MARK: Time

    mutating func exchangeTimedOut(_ exchange: Exchange, now: Instant) -> Action {
        switch exchange.phase {
        case .routed, .connecting:
            preconditionFailure("Invalid phase with a deadline: \(exchange.phase)")
        case .waitingForToken:
            let failure = SessionFailure.timedOut(reason: "no new token within refresh_timeout")
            return self.answerLocally(exchange, .session(failure), closes: false)
        case .sent(let sent):
            if exchange.isWaitingForRequestBody(sent) {
                return self.answerLocally(exchange, .requestBodyTimeout, closes: true)
            }
            return self.answerLocally(
                exchange,
                .upstreamTimeout(origin: exchange.target.origin.description),
                closes: false
            )
        }
    }
}

extension ResponseHead {
    /// `WWW-Authenticate: DPoP error="use_dpop_nonce"` (RFC 9449 §9): the server wants a proof with
    /// the nonce its `DPoP-Nonce` carries.
    var asksForDPoPNonce: Bool {
        self.fields.contains { field in
            self.string(field.name).lowercased() == "www-authenticate"
                && self.string(field.value).lowercased().contains("use_dpop_nonce")
        }
    }
}

extension Exchange {
    /// Whether the upstream connection can be pooled once the rest of `head`'s response is read.
    func leavesConnectionReusable(after head: ResponseHead) -> Bool {
        head.allowsReuse && self.isRequestComplete && head.framing(requestMethod: self.head.method) != .untilClose
    }
}
