import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import BearerSession

/// Performing the machine's actions: the only place where a decision turns into I/O.
extension ClientConnection {
    typealias Action = ClientConnectionStateMachine.Action

    /// Performs `action`, and the actions of the answers that come at once (the token session, a
    /// pooled connection), in a loop: one event never nests another.
    func run(_ first: consuming Action) {
        self.eventCount &+= 1
        var action = first
        while true {
            let now = self.loop.now
            // Consumed, not copied: an action's payload is moved out, never retained twice.
            switch consume action {
            case .none:
                return

            case .reserveReplayBody(let bytes):
                let granted = self.runtime.replayBudget.reserve(bytes)
                action = self.machine.replayBodyReserved(bytes, granted: granted, now: now)

            case .releaseReplayBody(let bytes):
                self.runtime.replayBudget.release(bytes)
                return

            case .requestToken(let session, let reserving):
                let reserved = reserving > 0 && self.runtime.replayBudget.reserve(reserving) ? reserving : 0
                let answer = self.context.ports[session.index].tokenForRequest(self)
                action = self.machine.tokenAnswered(answer, reserved: reserved, now: now)

            case .connectUpstream(let origin, let allowReuse):
                if allowReuse, self.holdPooled(origin) {
                    // A pooled connection is an HTTP/1.1 one (dropped with the refused call).
                    if self.refusesGRPCOverHTTP1(to: origin) { return }
                    action = self.machine.upstreamReady(isReused: true, now: now)
                } else {
                    self.connectUpstream(to: origin)
                    return
                }

            case .replay(let origin):
                self.context.metrics.replays += 1
                action = .connectUpstream(origin, allowReuse: true)

            case .sendRequest(let request):
                self.send(request)
                return

            case .forwardRequestBody, .forwardResponseBody:
                preconditionFailure("Body actions are performed where the bytes are parsed")

            case .endRequestBody(let chunked):
                if chunked { self.upstream?.stream.withOutbound { $0.writeLastChunk() } }
                return

            case .reportRejection(let session, let generation, let canWait):
                self.context.metrics.recordUpstreamRejection(session: session.index)
                let answer = self.context.ports[session.index].upstreamRejected(
                    generation: generation,
                    canWait: canWait,
                    self
                )
                action = self.machine.rejectionAnswered(answer, now: now)

            case .discardResponse(let reusable, let next):
                if let upstream = self.upstream {
                    self.upstream = nil
                    UpstreamDrainer.drain(upstream, pool: self.context.pool, reusable: reusable)
                }
                switch next {
                case .wait: return
                case .replay(let origin): action = .replay(origin)
                case .retryWithDPoPNonce(let update): action = Self.retry(with: update)
                }

            case .writeInformational(let head):
                // An HTTP/2 stream sends no interim answers: its client never waits for one.
                if self.servesHTTP2Stream { return }
                self.stream.withOutbound { $0.writeInformationalHead(head) }
                // 100 Continue must reach the client now: it is waiting for it before sending its body.
                self.stream.flush()
                return

            case .forwardResponseHead(let response):
                self.runtime.replayBudget.release(response.releasesReplayBytes)
                response.dpopNonce?.remember()
                if let refused = response.refusalOf {
                    self.context.metrics.recordUpstreamRejection(session: refused.index)
                }
                if let accepted = response.accepted {
                    self.context.ports[accepted.session.index].upstreamAccepted(generation: accepted.generation)
                }
                self.grpcStatus = response.head.grpcStatus
                if let http2Stream = self.http2Stream {
                    return http2Stream.responseHeadForwarded(response.head, framing: response.framing)
                }
                self.stream.withOutbound { buffer in
                    buffer.writeForwardedResponseHead(
                        response.head,
                        framing: response.framing,
                        keepAlive: response.keepAlive,
                        clientVersion: response.clientVersion
                    )
                }
                return

            case .finishExchange(let end):
                self.finish(end)
                return

            case .respond(let response):
                self.respond(response)
                return

            case .openTunnel(let origin):
                self.logTunnel(to: origin)
                self.openTunnel(to: origin)
                return

            case .startTLS(let host):
                self.startTLS(forHost: host)
                return

            case .countInterceptedTunnel:
                self.context.metrics.interceptedTunnels += 1
                return

            case .writeTunnelEstablished(let record):
                self.stream.withOutbound { $0.writeStaticString("HTTP/1.1 200 Connection established\r\n\r\n") }
                self.recordCompletion(record, status: 200, bytes: 0, replayed: false, decision: .otherHost)
                return

            case .acceptServedTunnel(let record):
                self.stream.withOutbound { $0.writeStaticString("HTTP/1.1 200 Connection established\r\n\r\n") }
                self.recordCompletion(record, status: 200, bytes: 0, replayed: false)
                return

            case .switchProtocols(let head, let record, let accepted, let releasesReplayBytes):
                self.runtime.replayBudget.release(releasesReplayBytes)
                if let accepted {
                    self.context.ports[accepted.session.index].upstreamAccepted(generation: accepted.generation)
                }
                self.stream.withOutbound { $0.writeSwitchingProtocolsHead(head) }
                self.recordCompletion(record, status: 101, bytes: 0, replayed: false)
                return

            case .shutDownUpstreamWrite:
                self.upstream?.stream.shutdownWriteAfterFlush()
                return

            case .shutDownClientWrite:
                self.stream.shutdownWriteAfterFlush()
                return

            case .closeAfterFlush:
                self.stream.closeAfterFlush()
                return

            case .close(let reason):
                self.log(reason)
                self.runtime.replayBudget.release(reason.releasesReplayBytes)
                self.releaseEverything(cancelling: reason.cancelsWaiter)
                self.stream.close()
                return
            }
        }
    }

    // MARK: Upstream connections

    /// Makes this connection the owner of `upstream`.
    private func hold(_ upstream: UpstreamConnection) {
        upstream.owner = self
        self.upstream = upstream
    }

    /// Makes an idle pooled connection to `origin` this connection's; false when the pool has none.
    /// The leased reference is moved in, never bound: bound, it was retained for the store and
    /// released after.
    private func holdPooled(_ origin: Origin) -> Bool {
        let pooled = self.context.pool.lease(origin)
        guard pooled != nil else { return false }
        self.upstream = pooled
        self.upstream?.owner = self
        return true
    }

    /// A connection to `origin` for the exchange: a stream of a shared HTTP/2 connection when its
    /// session's `upstream_http2` says so (`HTTP2UpstreamPool`), else a connection of its own.
    private func connectUpstream(to origin: Origin) {
        if let setting = self.machine.exchangeUpstreamHTTP2,
            self.context.http2Upstreams.speaksHTTP2(to: origin, setting)
        {
            return self.leaseHTTP2Stream(to: origin)
        }
        if self.refusesGRPCOverHTTP1(to: origin) { return }
        self.connectAttempt = self.runtime.connector.connect(to: origin, on: self.loop) { result in
            self.connectAttempt = nil
            self.connected(to: origin, result.map { ($0, false) })
        }
    }

    private func leaseHTTP2Stream(to origin: Origin) {
        let waiter = HTTP2UpstreamPool.Waiter { lease in
            self.http2Waiter = nil
            switch lease {
            case .stream(let stream): self.connected(to: origin, .success((stream, true)))
            case .http1(let stream?):
                if self.refusesGRPCOverHTTP1(to: origin) { return stream.close() }
                self.connected(to: origin, .success((stream, false)))
            case .http1(nil): self.connectUpstream(to: origin)
            case .failed(let error): self.connected(to: origin, .failure(error))
            }
        }
        self.http2Waiter = waiter
        self.context.http2Upstreams.lease(origin, waiter)
    }

    /// A gRPC call towards an upstream spoken to in HTTP/1.1 (upstream_http2 = off, or its TLS chose
    /// http/1.1) ends at once with UNAVAILABLE naming the key: HTTP/1.1 cannot carry it.
    private func refusesGRPCOverHTTP1(to origin: Origin) -> Bool {
        guard self.machine.exchangeIsGRPC else { return false }
        self.run(self.machine.upstreamConnectFailed(.grpcNeedsHTTP2(origin: origin.description)))
        self.pump()
        return true
    }

    /// The exchange's upstream connection is made (`isHTTP2Stream`: a stream's pipe), or failed.
    private func connected(to origin: Origin, _ result: Result<(StreamConnection, isHTTP2Stream: Bool), OutboundError>)
    {
        switch result {
        case .success(let (stream, isHTTP2Stream)):
            let upstream = UpstreamConnection(
                stream: stream,
                origin: origin,
                pool: self.context.pool,
                isHTTP2Stream: isHTTP2Stream
            )
            // A pipe is started here; a socket was by its connect attempt.
            if isHTTP2Stream { stream.start(delegate: upstream) }
            self.hold(upstream)
            self.run(self.machine.upstreamReady(isReused: false, now: self.loop.now))
        case .failure(let error):
            self.context.metrics.upstreamConnectErrors += 1
            self.runtime.logger.warn(
                "upstream connect failed",
                ["upstream": origin.description, "error": error.reason]
            )
            self.run(self.machine.upstreamConnectFailed(ProxyError(error, origin: origin)))
        }
        self.pump()
    }

    /// The exchange no longer waits for an upstream connection.
    private func cancelConnecting() {
        self.connectAttempt?.cancel()
        self.connectAttempt = nil
        self.http2Waiter?.cancel()
        self.http2Waiter = nil
    }

    /// The first tunnel to a host says, once, that the host is no inject host (a client that meant
    /// the API gets its own certificate and a 401 through it); the others are debug lines.
    private func logTunnel(to origin: Origin) {
        let tunnelled = self.runtime.router.tunnelledHosts
        if tunnelled.isFirstTunnel(to: origin) {
            self.runtime.logger.info(
                "CONNECT tunnelled as is (not an inject host)",
                ["target": origin.description, "inject_hosts": tunnelled.injectHosts]
            )
        } else {
            self.runtime.logger.debug("tunnel", ["to": origin.description])
        }
    }

    private func openTunnel(to origin: Origin) {
        self.connectAttempt = self.runtime.connector.connect(to: origin, on: self.loop) { result in
            self.connectAttempt = nil
            switch result {
            case .success(let stream):
                self.hold(UpstreamConnection(stream: stream, origin: origin, pool: self.context.pool))
                self.run(self.machine.tunnelConnected(now: self.loop.now))
            case .failure(let error):
                self.run(self.machine.tunnelConnectFailed(ProxyError(error, origin: origin)))
            }
            self.pump()
        }
    }

    /// Remembers the nonce and counts the retry; the request goes again with a new proof. Out of
    /// line: `run` is the plain bearer path's too.
    @inline(never)
    private static func retry(
        with update: ClientConnectionStateMachine.DPoPNonceUpdate
    ) -> ClientConnectionStateMachine.Action {
        update.remember()
        update.prover.nonceRetries.add(1, ordering: .relaxed)
        return .connectUpstream(update.origin, allowReuse: true)
    }

    /// Writes the request head upstream, then the body bytes already read (a replay or a resend).
    private func send(_ request: ClientConnectionStateMachine.RequestToSend) {
        // The stream held, not the upstream: calls on a held upstream's stream retained it each time.
        guard let upstreamStream = self.upstream?.stream else {
            preconditionFailure("Invalid state: a request to send, no upstream")
        }
        self.upstream?.parser.expectResponse(to: request.head.method)
        self.upstreamBytesSentBeforeRequest = upstreamStream.bytesSent
        upstreamStream.withOutbound { buffer in
            buffer.writeForwardedRequestHead(
                request.head,
                target: request.target,
                path: request.path,
                authorization: request.authorization,
                // Looked up only for a DPoP-bound token's line: the plain bearer path pays one byte compare.
                dpop: request.authorization.map(DPoPLine.isDPoPBound) == true ? request.target.tokenSession?.dpop : nil,
                keepsTrailersTE: self.upstream?.isHTTP2Stream == true,
                spent: request.spent
            )
            let kept = request.keptBody.readableBytes
            if request.head.framing == .chunked {
                buffer.writeChunk(request.keptBody)
                if request.endsChunkedBody { buffer.writeLastChunk() }
            } else if kept > 0 {
                buffer.writeBuffer(request.keptBody)
            }
        }
    }

    // MARK: Ending exchanges

    private func finish(_ end: ClientConnectionStateMachine.ExchangeEnd) {
        self.runtime.replayBudget.release(end.releasesReplayBytes)
        if !self.upstreamTrailers.isEmpty {
            self.grpcStatus = GRPC.status(inTrailerSection: self.upstreamTrailers) ?? self.grpcStatus
            self.passOnTrailers(chunked: end.writesChunkedEnd, request: end.record.head)
        } else if end.writesChunkedEnd {
            self.stream.withOutbound { $0.writeLastChunk() }
        }
        self.recordCompletion(end.record, status: end.status, bytes: end.bodyBytes, replayed: end.replayed)
        if let upstream = self.upstream {
            self.upstream = nil
            if end.poolsUpstream {
                upstream.completedExchanges += 1
                self.context.pool.release(upstream)
            } else {
                upstream.close()
            }
        }
        if end.closesConnection { self.stream.closeAfterFlush() }
    }

    /// The upstream's response trailers end the chunked body for a client that takes them: an
    /// HTTP/2 stream's exchange (which sends them as trailers) or a client that sent `TE:
    /// trailers` (RFC 9110 §10.1.4); anywhere else they are dropped and counted.
    private func passOnTrailers(chunked: Bool, request: RequestHead?) {
        let trailers = self.upstreamTrailers
        self.upstreamTrailers = []
        let takesTrailers =
            self.servesHTTP2Stream
            || request.map { head in
                head.bytes.withUnsafeBytes { raw in
                    head.fields.contains { $0.knownName == .te && equalsCaseInsensitive(raw, $0.value, "trailers") }
                }
            } == true
        guard chunked && takesTrailers else {
            self.context.metrics.trailersDropped += 1
            if chunked { self.stream.withOutbound { $0.writeLastChunk() } }
            return
        }
        self.stream.withOutbound { buffer in
            buffer.writeStaticString("0\r\n")
            buffer.writeBytes(trailers)
            buffer.writeStaticString("\r\n")
        }
    }

    private func respond(_ response: ClientConnectionStateMachine.LocalResponse) {
        if response.endsExchange {
            self.cancelConnecting()
            self.dropUpstream()
        }
        if let parked = response.cancelsWaiter { self.context.ports[parked.session.index].cancel(parked.ticket) }
        self.runtime.replayBudget.release(response.releasesReplayBytes)
        let error = response.error
        self.runtime.logger.debug("responded with an error", ["status": "\(error.status)", "error": error.shortName])
        if let refusal = error.connectRefusal {
            self.runtime.logger.warn("CONNECT refused", ["target": refusal.target, "reason": refusal.reason])
        }
        if case .notAllowed(_, let session, let rule) = error {
            session.refusals.withLock { $0[rule, default: 0] += 1 }
        }
        if let record = response.record {
            let decision: AuditLogBuffer.Decision
            switch error {
            case .notAllowed(_, let session, let rule): decision = .refused(session: session, rule: rule)
            case .session: decision = .noToken
            case .otherHostDenied: decision = .otherHost
            default: decision = Self.decision(record)
            }
            // A gRPC answer carries its sentence in grpc-message: its body is empty.
            let bytes = response.isGRPC ? 0 : error.message.utf8.count + 1
            if response.isGRPC { self.grpcStatus = GRPC.status(forHTTPStatus: error.status) }
            self.recordCompletion(record, status: error.status, bytes: bytes, replayed: false, decision: decision)
        } else {
            self.context.metrics.recordRequest(status: error.status, seconds: 0, isHTTP2: self.servesHTTP2Stream)
        }
        self.stream.withOutbound {
            if response.isGRPC {
                $0.writeGRPCResponse(
                    status: GRPC.status(forHTTPStatus: error.status),
                    message: error.message,
                    close: response.closesConnection
                )
            } else {
                $0.writeProxyResponse(
                    status: error.status,
                    message: error.message,
                    close: response.closesConnection,
                    extraFields: error.extraFields
                )
            }
        }
        if response.closesConnection { self.stream.closeAfterFlush() }
    }

    /// Lets go of everything the connection holds outside itself. Runs once, when the machine closes.
    private func releaseEverything(cancelling waiter: ParkedRequest?) {
        self.cancelTimer()
        if let parked = waiter { self.context.ports[parked.session.index].cancel(parked.ticket) }
        self.cancelConnecting()
        self.dropUpstream()
        self.context.clients[ObjectIdentifier(self)] = nil
        // An HTTP/2 stream's exchange outlives its streams; each stream counts itself (`HTTP2StreamExchange`).
        if !self.servesHTTP2Stream { self.runtime.connectionClosed() }
        // Before the stream closes: its HTTP/2 stream takes what was written to it.
        if self.servesHTTP2Stream { self.http2Stream?.exchangeClosed() }
    }

    private func log(_ reason: ClientConnectionStateMachine.CloseReason) {
        let logger = self.runtime.logger
        switch reason {
        case .idle:
            logger.debug("closing idle client connection")
        case .tunnelIdle:
            logger.debug(
                "closing idle tunnel",
                ["tunnel_idle_timeout": "\(self.runtime.configuration.tunnelIdleTimeout)"]
            )
        case .relayEnded, .clientGone:
            break
        case .aborted(let reason, _, _):
            logger.debug("exchange aborted", ["reason": reason])
        case .tlsInsideServedTunnel(let origin):
            logger.warn(
                "client started TLS inside a CONNECT tunnel to an inject host; closing: the proxy cannot add a token inside TLS unless tls_intercept = on; or send plain http:// requests instead",
                ["to": origin?.description ?? "-"]
            )
        case .clearTextInsideInterceptedTunnel, .interceptHandshakeFailed, .interceptHandshakeTimedOut,
            .interceptCertificateUnavailable:
            self.logInterceptFailure(reason)
        }
    }

    // MARK: Accounting

    /// Counts a finished request and writes its access log and audit log lines. `decision`: what the
    /// rules and sessions made of it, when the record alone does not say (`decision(_:)`).
    func recordCompletion(
        _ record: ClientConnectionStateMachine.RequestRecord,
        status: Int,
        bytes: Int,
        replayed: Bool,
        decision: AuditLogBuffer.Decision? = nil
    ) {
        let duration = self.loop.now - record.startedAt
        let grpcStatus = self.grpcStatus
        self.grpcStatus = nil
        self.context.metrics.recordRequest(
            status: status,
            seconds: duration.seconds,
            isHTTP2: self.servesHTTP2Stream,
            session: record.target?.session?.index
        )
        self.context.accessLog?.append(
            head: record.head,
            host: record.target?.logName,
            session: record.target?.session?.logName,
            status: status,
            bodyBytes: bytes,
            duration: duration,
            replayed: replayed,
            isHTTP2: self.servesHTTP2Stream,
            grpcStatus: grpcStatus
        )
        self.context.auditLog?.append(
            record,
            client: self.auditClient,
            status: status,
            bytesOut: bytes,
            duration: duration,
            replayed: replayed,
            decision: decision ?? Self.decision(record),
            isHTTP2: self.servesHTTP2Stream
        )
    }

    /// A routed request to a host of no session went on without a token; the rest were allowed.
    private static func decision(_ record: ClientConnectionStateMachine.RequestRecord) -> AuditLogBuffer.Decision {
        if let target = record.target, target.session == nil { return .otherHost }
        return .allowed
    }
}
