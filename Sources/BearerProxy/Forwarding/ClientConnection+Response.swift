import BearerCore
import BearerHTTP
import BearerIO

extension ClientConnection: UpstreamConnectionOwner {
    func upstreamReceived(_ upstream: UpstreamConnection) {
        guard let exchange = self.exchange, exchange.upstream === upstream else { return }
        if !exchange.hasResponseStarted { exchange.hasResponseStarted = true }
        self.processUpstreamInput(upstream)
    }

    func upstreamWritable(_ upstream: UpstreamConnection) {
        guard let exchange = self.exchange, exchange.upstream === upstream else { return }
        self.stream.setReading(true)
        self.processClientInput()
    }

    func upstreamReadEnded(_ upstream: UpstreamConnection) {
        guard let exchange = self.exchange, exchange.upstream === upstream else { return }
        self.processUpstreamInput(upstream)
        guard self.exchange === exchange else { return }
        if upstream.parser.canEndAtEndOfInput && exchange.isResponseHeadSent {
            // A close-delimited body ends here.
            exchange.isUpstreamPaused = false
            self.finishExchange(exchange, upstreamReusable: false)
            return
        }
        self.upstreamFailed(exchange, upstream, reset: false)
    }

    func upstreamClosed(_ upstream: UpstreamConnection, error: IOError?) {
        guard let exchange = self.exchange, exchange.upstream === upstream else { return }
        self.upstreamFailed(exchange, upstream, reset: error != nil)
    }

    /// The upstream connection ended before the response did.
    private func upstreamFailed(_ exchange: Exchange, _ upstream: UpstreamConnection, reset: Bool) {
        upstream.close()
        exchange.upstream = nil
        if exchange.isResponseHeadSent {
            // Part of the response is out: cut the client's connection so it sees a truncated
            // response (a missing last chunk or a short body), never a complete-looking one.
            self.abort(reason: "upstream ended mid-response")
            return
        }
        if exchange.upstreamWasReused && !exchange.hasResponseStarted && exchange.attempts < 3 && exchange.isReplayable
        {
            // A pooled connection the upstream had already closed: the request never reached it.
            self.runtime.logger.debug("retrying on a fresh connection", ["upstream": upstream.origin.description])
            exchange.isRequestHeadSent = false
            self.connectUpstream(exchange, allowReuse: false)
            return
        }
        let origin = upstream.origin.description
        self.respond(with: reset ? .upstreamReset(origin: origin) : .upstreamClosed(origin: origin))
    }

    /// Parses what the upstream sent and passes it to the client, while the client keeps up.
    func processUpstreamInput(_ upstream: UpstreamConnection) {
        guard let exchange = self.exchange else { return }
        let upstreamStream = upstream.stream
        while !self.isClosed && self.exchange === exchange {
            if self.stream.pendingWriteBytes > Self.highWatermark {
                // Pause only if the kernel will not take the bytes now; then the client's
                // writability (streamWritable) resumes reading the upstream.
                self.stream.flush()
                if self.isClosed { return }
                if self.stream.pendingWriteBytes > Self.highWatermark {
                    exchange.isUpstreamPaused = true
                    upstreamStream.setReading(false)
                    return
                }
            }
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try upstreamStream.inbound.withUnsafeReadableBytes { raw throws(HTTPParseError) in
                    try upstream.parser.next(raw)
                }
            } catch {
                upstream.close()
                exchange.upstream = nil
                self.runtime.logger.info(
                    "malformed upstream response",
                    ["upstream": upstream.origin.description, "error": error.message]
                )
                self.respond(with: .upstreamMalformed(origin: upstream.origin.description, error))
                return
            }
            if exchange.isRequestHeadSent {
                self.extendDeadline(.upstreamResponse, after: self.configuration.upstreamTimeout)
            }
            switch event {
            case .needMore(let consumed):
                upstreamStream.inbound.moveReaderIndex(forwardBy: consumed)
                self.stream.flush()
                return
            case .head(let head, let consumed):
                upstreamStream.inbound.moveReaderIndex(forwardBy: consumed)
                if head.isInformational {
                    self.forwardInformational(head, exchange: exchange)
                } else if self.handledAsExpiredToken(head, exchange: exchange, upstream: upstream) {
                    return
                } else {
                    self.sendResponseHead(head, exchange: exchange)
                }
            case .body(let range):
                upstreamStream.inbound.withUnsafeReadableBytes { raw in
                    self.writeResponseBody(UnsafeRawBufferPointer(rebasing: raw[range]), exchange: exchange)
                }
                upstreamStream.inbound.moveReaderIndex(forwardBy: range.upperBound)
            case .end(let consumed):
                upstreamStream.inbound.moveReaderIndex(forwardBy: consumed)
                let reusable =
                    exchange.responseHead?.allowsReuse == true && exchange.isRequestComplete
                    && upstreamStream.inbound.isEmpty
                self.finishExchange(exchange, upstreamReusable: reusable)
                return
            }
        }
        if !self.isClosed { self.stream.flush() }
    }

    /// Sends an injected request's refresh_on answer (401) to the token session instead of the client,
    /// when the session says so: the request is replayed with a newer token, now or after a refresh.
    /// Returns false when the response goes to the client after all.
    private func handledAsExpiredToken(_ head: ResponseHead, exchange: Exchange, upstream: UpstreamConnection) -> Bool {
        guard let generation = exchange.generation else { return false }
        let session = self.runtime.session
        guard self.runtime.refreshOn.contains(head.status) else {
            session.upstreamAccepted(generation: generation)
            self.dropReplayBody(exchange)
            return false
        }
        self.context.metrics.upstreamRejections += 1
        let result = session.upstreamRejected(
            generation: generation,
            isReplay: exchange.isReplay,
            isReplayable: exchange.isReplayable && !exchange.isReplay,
            loop: self.loop,
            waiter: self
        )
        switch result {
        case .forwardToClient:
            self.dropReplayBody(exchange)
            return false
        case .replay(let line, let newGeneration):
            self.discardResponse(of: upstream, head: head, exchange: exchange)
            exchange.wasRejected = true
            exchange.authorization = line
            exchange.generation = newGeneration
            self.context.metrics.replays += 1
            self.prepareReplay(exchange)
            self.connectUpstream(exchange, allowReuse: true)
            return true
        case .parked(let id):
            self.discardResponse(of: upstream, head: head, exchange: exchange)
            exchange.wasRejected = true
            self.waitForToken(exchange, id)
            return true
        }
    }

    /// Hands the rest of a response nobody will read to a drainer, which returns the connection to
    /// the pool once the response ends (or closes it when that cannot be done cheaply).
    private func discardResponse(of upstream: UpstreamConnection, head: ResponseHead, exchange: Exchange) {
        exchange.upstream = nil
        let reusable =
            head.allowsReuse && exchange.isRequestComplete
            && head.framing(requestMethod: exchange.head.method) != .untilClose
        UpstreamDrainer.drain(upstream, pool: self.context.pool, reusable: reusable)
    }

    private func forwardInformational(_ head: ResponseHead, exchange: Exchange) {
        if head.status == 101 {
            // The proxy never forwards Upgrade, so a switch of protocols is the upstream's mistake.
            self.respond(with: .upstreamMalformed(origin: exchange.target.origin.description, .invalidStatusLine))
            return
        }
        guard exchange.head.version == .http11 else { return }
        self.stream.withOutbound { $0.writeInformationalHead(head) }
        // 100 Continue must reach the client now: it is waiting for it before sending its body.
        self.stream.flush()
    }

    private func sendResponseHead(_ head: ResponseHead, exchange: Exchange) {
        exchange.responseHead = head
        let clientVersion = exchange.head.version
        switch head.framing(requestMethod: exchange.head.method) {
        case .none: exchange.clientFraming = .none
        case .contentLength(let length): exchange.clientFraming = .contentLength(length)
        case .chunked, .untilClose: exchange.clientFraming = clientVersion == .http11 ? .chunked : .closeDelimited
        }
        if exchange.clientFraming == .closeDelimited || !exchange.isRequestComplete || self.hasClientReadEnded {
            self.closesAfterExchange = true
        }
        let keepAlive = !self.closesAfterExchange
        self.stream.withOutbound { buffer in
            buffer.writeForwardedResponseHead(
                head,
                framing: exchange.clientFraming,
                keepAlive: keepAlive,
                clientVersion: clientVersion
            )
        }
        exchange.isResponseHeadSent = true
    }

    private func writeResponseBody(_ bytes: UnsafeRawBufferPointer, exchange: Exchange) {
        exchange.responseBodyBytes += bytes.count
        if exchange.clientFraming == .chunked {
            self.stream.withOutbound { buffer in
                buffer.writeHexadecimal(bytes.count)
                buffer.writeStaticString("\r\n")
                buffer.writeBytes(bytes)
                buffer.writeStaticString("\r\n")
            }
        } else {
            self.stream.write(bytes)
        }
    }

    /// The response is complete: end its framing, pool or close the upstream connection, move on.
    func finishExchange(_ exchange: Exchange, upstreamReusable: Bool) {
        if exchange.clientFraming == .chunked {
            self.stream.withOutbound { $0.writeStaticString("0\r\n\r\n") }
        }
        self.recordCompletion(
            status: exchange.responseHead?.status ?? 0,
            head: exchange.head,
            bytes: exchange.responseBodyBytes,
            startedAt: exchange.startedAt,
            replayed: exchange.isReplay
        )
        if let upstream = exchange.upstream {
            exchange.upstream = nil
            if upstreamReusable {
                upstream.completedExchanges += 1
                self.context.pool.release(upstream)
            } else {
                upstream.close()
            }
        }
        self.endExchange(exchange)
        self.exchange = nil
        self.clearDeadline()
        self.exchangeEnded()
    }
}
