import BearerCore
import BearerHTTP
import BearerIO

extension ClientConnection {
    /// Parses what the client sent: the next request head when idle, else the current request's body
    /// as far as it can be forwarded now. Bytes of later (pipelined) requests wait in the buffer.
    func processClientInput() {
        while !self.isClosed {
            if let exchange = self.exchange {
                guard self.forwardRequestBody(exchange) else { break }
                continue
            }
            guard !self.closesAfterExchange, !self.stream.inbound.isEmpty, self.tunnel == nil else { break }
            if self.isAwaitingTunnelFirstByte {
                self.isAwaitingTunnelFirstByte = false
                let first = self.stream.inbound.withUnsafeReadableBytes { $0.first }
                if first == 0x16 {
                    self.runtime.logger.warn(
                        "client started TLS inside a CONNECT tunnel to an inject host; closing: the proxy cannot add a token inside TLS, send plain http:// requests instead",
                        ["to": self.tunnelTarget?.origin.description ?? "-"]
                    )
                    self.stream.close()
                    self.cleanUp()
                    return
                }
            }
            let event: HTTPRequestParser.Event
            do throws(HTTPParseError) {
                event = try self.stream.inbound.withUnsafeReadableBytes { raw throws(HTTPParseError) in
                    try self.parser.next(raw)
                }
            } catch {
                self.respond(with: .malformedRequest(error))
                return
            }
            switch event {
            case .head(let head, let consumed):
                self.stream.inbound.moveReaderIndex(forwardBy: consumed)
                self.headStartedAt = nil
                self.startExchange(head)
            case .needMore:
                if self.headStartedAt == nil {
                    self.headStartedAt = self.loop.now
                    self.setDeadline(.requestHead, after: self.configuration.clientHeaderTimeout)
                }
                self.limitReadAhead()
                return
            case .body, .end:
                preconditionFailure("Invalid state: body event without an exchange")
            }
        }
        self.limitReadAhead()
    }

    /// Stops reading while too much is buffered from the client that cannot be used yet.
    private func limitReadAhead() {
        guard !self.isClosed else { return }
        let buffered = self.stream.inbound.readableBytes
        if self.exchange != nil {
            self.stream.setReading(buffered < Self.readAheadLimit && !self.isUpstreamBackedUp)
        }
    }

    var isUpstreamBackedUp: Bool {
        (self.exchange?.upstream?.stream.pendingWriteBytes ?? 0) > Self.highWatermark
    }

    /// Forwards body bytes of the current request; returns whether to keep parsing.
    private func forwardRequestBody(_ exchange: Exchange) -> Bool {
        guard !exchange.isRequestComplete, exchange.isRequestHeadSent, let upstreamStream = exchange.upstream?.stream
        else { return false }
        if upstreamStream.pendingWriteBytes > Self.highWatermark {
            self.stream.setReading(false)
            return false
        }
        let event: HTTPRequestParser.Event
        do throws(HTTPParseError) {
            event = try self.stream.inbound.withUnsafeReadableBytes { raw throws(HTTPParseError) in
                try self.parser.next(raw)
            }
        } catch {
            self.respond(with: .malformedRequest(error))
            return false
        }
        switch event {
        case .body(let range):
            self.stream.inbound.withUnsafeReadableBytes { raw in
                let bytes = UnsafeRawBufferPointer(rebasing: raw[range])
                self.keepForReplay(bytes, exchange)
                self.writeRequestBody(bytes, exchange: exchange, to: upstreamStream)
            }
            self.stream.inbound.moveReaderIndex(forwardBy: range.upperBound)
            self.extendDeadline(.requestBody, after: self.configuration.clientIdleTimeout)
            upstreamStream.flush()
            return !self.isClosed && self.exchange === exchange
        case .needMore(let consumed):
            self.stream.inbound.moveReaderIndex(forwardBy: consumed)
            return false
        case .end(let consumed):
            self.stream.inbound.moveReaderIndex(forwardBy: consumed)
            if case .chunked = exchange.head.framing {
                upstreamStream.withOutbound { $0.writeStaticString("0\r\n\r\n") }
            }
            exchange.isRequestComplete = true
            if !exchange.hasResponseStarted {
                self.extendDeadline(.upstreamResponse, after: self.configuration.upstreamTimeout)
            }
            upstreamStream.flush()
            return false
        case .head:
            preconditionFailure("Invalid state: a head inside a request body")
        }
    }

    private func writeRequestBody(_ bytes: UnsafeRawBufferPointer, exchange: Exchange, to upstream: StreamConnection) {
        switch exchange.head.framing {
        case .chunked:
            upstream.withOutbound { buffer in
                buffer.writeHexadecimal(bytes.count)
                buffer.writeStaticString("\r\n")
                buffer.writeBytes(bytes)
                buffer.writeStaticString("\r\n")
            }
        case .contentLength, .none:
            upstream.write(bytes)
        }
    }

    /// Routes a new request and starts its exchange.
    func startExchange(_ head: RequestHead) {
        self.clearDeadline()
        let hasBody = head.framing != .none && head.framing != .contentLength(0)
        // A bodiless request ends with its head; the parser moves on whatever happens to the request.
        if !hasBody { self.consumeEmptyBody() }
        if self.runtime.accessLog != nil {
            self.lastHead = head
        }
        self.lastHeadAt = self.loop.now
        if !head.wantsKeepAlive { self.closesAfterExchange = true }
        // Inside a served CONNECT tunnel, requests name their target through the tunnel, not Host.
        let insideTunnel = self.tunnelTarget != nil
        if let refusal = self.runtime.requestGuard.check(head, fromUnixSocket: self.isFromUnixSocket || insideTunnel) {
            if hasBody { self.closesAfterExchange = true }
            self.respond(with: refusal)
            return
        }
        let route: Route
        if let tunnelTarget = self.tunnelTarget, head.targetForm == .origin {
            route = .forward(tunnelTarget, path: .absolute(head.target))
        } else {
            route = self.runtime.router.route(head)
        }
        switch route {
        case .tunnel(let origin):
            self.openTunnel(to: origin)
        case .serveTunnel(let target):
            self.serveTunnel(to: target)
        case .reject(let error):
            if hasBody { self.closesAfterExchange = true }
            self.respond(with: error)
        case .forward(let target, let path):
            let exchange = Exchange(head: head, target: target, path: path, startedAt: self.loop.now)
            self.exchange = exchange
            exchange.isRequestComplete = !hasBody
            self.decideReplayability(exchange)
            guard target.injectsToken else {
                self.connectUpstream(exchange, allowReuse: true)
                return
            }
            switch self.runtime.session.tokenForRequest(loop: self.loop, waiter: self) {
            case .ready(let line, let generation):
                exchange.authorization = line
                exchange.generation = generation
                self.connectUpstream(exchange, allowReuse: true)
            case .noToken:
                self.connectUpstream(exchange, allowReuse: true)
            case .parked(let id):
                self.waitForToken(exchange, id)
            case .failed(let failure):
                self.respond(with: .session(failure))
            }
        }
    }

    /// Bodies up to replay_body_limit are kept until the response status is known, within the
    /// proxy-wide replay_memory_limit; larger ones stream through and cannot be replayed.
    private func decideReplayability(_ exchange: Exchange) {
        switch exchange.head.framing {
        case .none, .contentLength(0):
            exchange.isReplayable = true
        case .contentLength(let length):
            exchange.isReplayable =
                length <= self.configuration.replayBodyLimit && self.runtime.reserveReplayMemory(length)
            if exchange.isReplayable { exchange.replayReserved = length }
        case .chunked:
            exchange.isReplayable = true
        }
    }

    /// Keeps forwarded body bytes for a replay, while the request is still replayable.
    private func keepForReplay(_ bytes: UnsafeRawBufferPointer, _ exchange: Exchange) {
        guard exchange.isReplayable else { return }
        let needed = exchange.replayBody.readableBytes + bytes.count
        if needed > exchange.replayReserved {
            let more = max(needed - exchange.replayReserved, 64 * 1024)
            guard needed <= self.configuration.replayBodyLimit, self.runtime.reserveReplayMemory(more) else {
                self.dropReplayBody(exchange)
                return
            }
            exchange.replayReserved += more
        }
        exchange.replayBody.writeBytes(bytes)
    }

    /// Frees the replay copy: the status is known, or the body outgrew the limits.
    func dropReplayBody(_ exchange: Exchange) {
        if exchange.hasBody { exchange.isReplayable = false }
        exchange.replayBody = ByteBuffer()
        self.runtime.releaseReplayMemory(exchange.replayReserved)
        exchange.replayReserved = 0
    }

    /// Parks the exchange until the token session resumes it (or gives up on its behalf).
    func waitForToken(_ exchange: Exchange, _ id: TokenSession.WaiterID) {
        exchange.waiterID = id
        // The session answers within refresh_timeout; this deadline only guards against it never doing so.
        self.setDeadline(.token, after: self.configuration.refreshTimeout + .seconds(5))
    }

    /// Moves the parser past the end of a request that has no body.
    private func consumeEmptyBody() {
        let event = try? self.parser.next(UnsafeRawBufferPointer(start: nil, count: 0))
        guard case .end = event else { preconditionFailure("Invalid state: a bodiless request did not end") }
    }

    /// Finds an upstream connection for the exchange: an idle pooled one, or a new one.
    func connectUpstream(_ exchange: Exchange, allowReuse: Bool) {
        exchange.attempts += 1
        if allowReuse, let upstream = self.context.pool.lease(exchange.target.origin) {
            upstream.owner = self
            exchange.upstream = upstream
            exchange.upstreamWasReused = true
            self.sendRequestHead(exchange, on: upstream)
            return
        }
        exchange.upstreamWasReused = false
        self.setDeadline(.upstreamConnect, after: self.configuration.upstreamConnectTimeout + .seconds(1))
        let origin = exchange.target.origin
        exchange.connectAttempt = self.runtime.connector.connect(to: origin, on: self.loop) { result in
            exchange.connectAttempt = nil
            guard !self.isClosed, self.exchange === exchange else {
                if case .success(let stream) = result { stream.close() }
                return
            }
            switch result {
            case .success(let stream):
                let upstream = UpstreamConnection(stream: stream, origin: origin, pool: self.context.pool)
                upstream.owner = self
                exchange.upstream = upstream
                self.sendRequestHead(exchange, on: upstream)
            case .failure(let error):
                self.context.metrics.upstreamConnectErrors += 1
                self.runtime.logger.info(
                    "upstream connect failed",
                    ["upstream": origin.description, "error": error.reason]
                )
                self.respond(with: ProxyError(error, origin: origin))
            }
        }
    }

    /// Writes the request head upstream, then the body bytes already read (on a replay or retry),
    /// then whatever else the client has sent.
    func sendRequestHead(_ exchange: Exchange, on upstream: UpstreamConnection) {
        let stream = upstream.stream
        upstream.parser.expectResponse(to: exchange.head.method)
        stream.withOutbound { buffer in
            buffer.writeForwardedRequestHead(
                exchange.head,
                target: exchange.target,
                path: exchange.path,
                authorization: exchange.authorization,
                framing: exchange.head.framing
            )
            let kept = exchange.replayBody.readableBytes
            if case .chunked = exchange.head.framing {
                if kept > 0 {
                    buffer.writeHexadecimal(kept)
                    buffer.writeStaticString("\r\n")
                    buffer.writeBuffer(exchange.replayBody)
                    buffer.writeStaticString("\r\n")
                }
                if exchange.isRequestComplete { buffer.writeStaticString("0\r\n\r\n") }
            } else if kept > 0 {
                buffer.writeBuffer(exchange.replayBody)
            }
        }
        exchange.isRequestHeadSent = true
        if exchange.isRequestComplete {
            self.setDeadline(.upstreamResponse, after: self.configuration.upstreamTimeout)
        } else {
            // A body that stops arriving is bounded too.
            self.setDeadline(.requestBody, after: self.configuration.clientIdleTimeout)
        }
        stream.flush()
        guard !self.isClosed, self.exchange === exchange else { return }
        self.processClientInput()
    }
}
