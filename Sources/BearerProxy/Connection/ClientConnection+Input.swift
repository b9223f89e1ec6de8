import BearerCore
import BearerHTTP
import BearerIO

/// Parsing: each side's bytes become the machine's events, as far as the machine wants them now.
extension ClientConnection {
    /// Parses what the client sent: request heads, the current body, the first bytes inside a
    /// served tunnel, or raw bytes for a relay. Stops when the machine wants nothing more, a buffer
    /// downstream is above its watermark, or the bytes run out.
    func processClientInput() {
        while !self.machine.isClosed {
            // Answers the client does not read pile up (a pipelining client that never reads):
            // stop reading its requests until it does.
            if self.stream.pendingWriteBytes > Self.highWatermark {
                self.stream.flush()
                if self.stream.pendingWriteBytes > Self.highWatermark { return }
            }
            switch self.machine.clientInput {
            case .none:
                return
            case .head:
                guard self.isProtocolDecided || self.decideProtocol() else { return }
                guard self.parseRequestHead() else { return }
            case .tunnelFirstBytes:
                guard let first = self.stream.inbound.withUnsafeReadableBytes({ $0.first }) else {
                    self.reportClientEndIfReached()
                    return
                }
                self.run(self.machine.servedTunnelReceivedFirstBytes(startsTLS: first == 0x16, now: self.loop.now))
            case .body:
                guard self.parseRequestBody() else { return }
            case .relay:
                self.relayFromClient()
                return
            }
        }
    }

    /// Returns whether to go on parsing.
    private func parseRequestHead() -> Bool {
        if self.stream.inbound.isEmpty {
            self.reportClientEndIfReached()
            return false
        }
        guard let event = self.nextRequestEvent() else { return false }
        switch event {
        case .head(let head, _):
            if head.framing == .none || head.framing == .contentLength(0) { self.consumeEmptyBody() }
            self.run(self.machine.requestHeadReceived(head, now: self.loop.now))
            return true
        case .needMore:
            self.machine.requestHeadStarted(now: self.loop.now)
            self.reportClientEndIfReached()
            return false
        case .body, .end:
            preconditionFailure("Invalid parser state: body event while a head was expected")
        }
    }

    /// The parser's next event over the client's bytes, which it consumes (body data goes to
    /// `payload` first); nil (and a 400) when they are not HTTP.
    @inline(__always)
    private func nextRequestEvent(
        payload: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) -> HTTPRequestParser.Event? {
        do throws(HTTPParseError) {
            return try self.stream.inbound.parseNext(payload: payload) { raw throws(HTTPParseError) in
                try self.parser.next(raw)
            }
        } catch {
            self.run(self.machine.requestMalformed(error))
            return nil
        }
    }

    /// Moves the parser past the end of a request that has no body: whatever happens to the request,
    /// the next bytes are the next request's.
    private func consumeEmptyBody() {
        let event = try? self.parser.next(UnsafeRawBufferPointer(start: nil, count: 0))
        guard case .end = event else { preconditionFailure("Invalid parser state: a bodiless request did not end") }
    }

    /// Forwards the current request's body upstream as it is parsed. Returns whether to go on.
    private func parseRequestBody() -> Bool {
        guard let upstream = self.upstream else { preconditionFailure("Invalid state: a body to send but no upstream") }
        let upstreamStream = upstream.stream
        if upstreamStream.pendingWriteBytes > Self.highWatermark {
            upstreamStream.flush()
            if upstreamStream.pendingWriteBytes > Self.highWatermark { return false }
        }
        let event = self.nextRequestEvent { bytes in
            upstreamStream.writeBodyPart(bytes, chunked: self.bodyBytesParsed(bytes))
        }
        guard let event else { return false }
        switch event {
        case .body:
            return true
        case .needMore:
            self.reportClientEndIfReached()
            return false
        case .end:
            self.run(self.machine.requestEnded(now: self.loop.now))
            return true
        case .head:
            preconditionFailure("Invalid parser state: a head inside a request body")
        }
    }

    /// Tells the machine about body bytes, first performing the replay budget's reservation or
    /// release it asks for (it then takes the same bytes); returns whether they go out as a chunk.
    private func bodyBytesParsed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        while true {
            switch self.machine.requestBodyReceived(bytes, now: self.loop.now) {
            case .forwardRequestBody(let chunked):
                return chunked
            case .reserveReplayBody(let count):
                let granted = self.runtime.replayBudget.reserve(count)
                self.run(self.machine.replayBodyReserved(count, granted: granted, now: self.loop.now))
            case .releaseReplayBody(let held):
                self.runtime.replayBudget.release(held)
            case let action:
                preconditionFailure("Invalid action for body bytes: \(action)")
            }
        }
    }

    /// The client's end is reported once every complete request before it has been parsed, and only
    /// while the machine reads from the client: a parked request's buffered body is not cut short.
    private func reportClientEndIfReached() {
        guard self.stream.hasReadEnded else { return }
        self.run(self.machine.clientFinished())
    }

    private func relayFromClient() {
        guard let upstream = self.upstream else { preconditionFailure("Invalid state: a relay without an upstream") }
        if !self.stream.inbound.isEmpty {
            if upstream.stream.pendingWriteBytes > Self.highWatermark { return }
            upstream.stream.write(self.stream.inbound)
            self.stream.inbound.clear()
            self.machine.relayed(now: self.loop.now)
        }
        self.reportClientEndIfReached()
    }

    // MARK: The upstream

    /// Parses what the upstream sent and passes it to the client, while the client keeps up.
    func processUpstreamInput() {
        // Held once for the pass, not once per response event: the loop ends when the exchange lets
        // go of it (a connection leased instead is read by the pump's next pass).
        guard let upstream = self.upstream else { return }
        while !self.machine.isClosed, self.upstream === upstream {
            if self.stream.pendingWriteBytes > Self.highWatermark {
                // Pause only if the kernel will not take the bytes now; the client's writability
                // brings the pump back.
                self.stream.flush()
                if self.stream.pendingWriteBytes > Self.highWatermark { return }
            }
            switch self.machine.upstreamInput {
            case .none:
                return
            case .response:
                guard self.parseResponse(upstream) else { return }
            case .relay:
                self.relayFromUpstream(upstream)
                return
            }
        }
    }

    /// Returns whether to go on parsing.
    private func parseResponse(_ upstream: UpstreamConnection) -> Bool {
        let upstreamStream = upstream.stream
        let now = self.loop.now
        let event: HTTPResponseParser.Event
        do throws(HTTPParseError) {
            event = try upstreamStream.inbound.parseNext(payload: { bytes in
                let action = self.machine.responseBodyReceived(count: bytes.count, now: now)
                guard case .forwardResponseBody(let chunked) = action else {
                    preconditionFailure("Invalid action for response bytes: \(action)")
                }
                self.stream.writeBodyPart(bytes, chunked: chunked)
            }) { raw throws(HTTPParseError) in
                try upstream.parser.next(raw)
            }
        } catch {
            self.runtime.logger.info(
                "malformed upstream response",
                ["upstream": upstream.origin.description, "error": error.message]
            )
            self.dropUpstream()
            self.run(self.machine.upstreamResponseMalformed(error))
            return false
        }
        switch event {
        case .needMore:
            if upstreamStream.hasReadEnded {
                let endsResponse = upstream.parser.canEndAtEndOfInput
                self.dropUpstream()
                self.run(
                    self.machine.upstreamEnded(endsResponse: endsResponse, sentNothing: false, reset: false, now: now)
                )
            }
            return false
        case .head(let head, _):
            if head.isInformational {
                self.run(self.machine.informationalReceived(head, now: now))
            } else {
                self.run(self.machine.responseHeadReceived(head, now: now))
            }
            return true
        case .body:
            return true
        case .end:
            if !upstream.parser.trailers.isEmpty { self.upstreamTrailers = upstream.parser.trailers }
            self.run(self.machine.responseEnded(upstreamSentMore: !upstreamStream.inbound.isEmpty, now: now))
            return true
        }
    }

    private func relayFromUpstream(_ upstream: UpstreamConnection) {
        let upstreamStream = upstream.stream
        if !upstreamStream.inbound.isEmpty {
            self.stream.write(upstreamStream.inbound)
            upstreamStream.inbound.clear()
            self.machine.relayed(now: self.loop.now)
        }
        if upstreamStream.hasReadEnded {
            self.run(self.machine.relayUpstreamEnded(closed: false))
        }
    }

    /// Closes the upstream connection of an exchange that cannot continue on it.
    func dropUpstream() {
        guard let upstream = self.upstream else { return }
        self.upstream = nil
        upstream.close()
    }
}

extension StreamConnection {
    /// Appends body bytes, framed as one chunk when `chunked`.
    func writeBodyPart(_ bytes: UnsafeRawBufferPointer, chunked: Bool) {
        if chunked {
            self.withOutbound { $0.writeChunk(bytes) }
        } else {
            self.write(bytes)
        }
    }
}
