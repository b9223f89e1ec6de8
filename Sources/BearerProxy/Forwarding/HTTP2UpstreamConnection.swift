import BearerCore
import BearerHTTP
import BearerHTTP2
import BearerIO
import BearerSession

/// One HTTP/2 connection to an upstream origin, shared by the streams of any number of exchanges
/// on its loop: feeds the server's bytes to its `HTTP2ClientConnectionStateMachine` and performs
/// the actions it returns; each stream is an `HTTP2UpstreamStream`, which its exchange sees as an
/// upstream connection of its own. Nothing of the protocol is decided here.
///
/// Made by the loop's `HTTP2UpstreamPool` when no connection to the origin has room for another
/// stream (SETTINGS_MAX_CONCURRENT_STREAMS); gone when the server closes it or sends GOAWAY and
/// its last stream ended. A stream the server refused or never processed is opened again on
/// another connection (`HTTP2UpstreamPool.reattach`). Confined to its loop.
final class HTTP2UpstreamConnection {
    let origin: Origin
    unowned let pool: HTTP2UpstreamPool
    private(set) var stream: StreamConnection?
    @exclusivity(unchecked) var machine: HTTP2ClientConnectionStateMachine
    @exclusivity(unchecked) private var parser: HTTP2FrameParser
    /// Exchanges waiting for the connection to be made, each to get a stream.
    @exclusivity(unchecked) private var waiters: [HTTP2UpstreamPool.Waiter] = []
    /// Streams moved here from another connection while this one is being made.
    @exclusivity(unchecked) private var arriving: [HTTP2UpstreamStream] = []
    /// Every stream handed out and not ended, whether its request head arrived yet or not.
    @exclusivity(unchecked) private var attached: [ObjectIdentifier: HTTP2UpstreamStream] = [:]
    /// Streams opened, by id.
    @exclusivity(unchecked) private var open: [UInt32: HTTP2UpstreamStream] = [:]
    /// Streams whose request head arrived while the server's limit was reached.
    @exclusivity(unchecked) private var queued: [HTTP2UpstreamStream] = []
    @exclusivity(unchecked) private(set) var isClosed = false
    @exclusivity(unchecked) private var isPumping = false

    init(origin: Origin, pool: HTTP2UpstreamPool) {
        self.origin = origin
        self.pool = pool
        var configuration = HTTP2ClientConnectionStateMachine.Configuration()
        configuration.maxHeaderBytes = pool.maxHeaderBytes
        self.machine = HTTP2ClientConnectionStateMachine(configuration: configuration)
        self.parser = configuration.makeFrameParser()
    }

    /// Whether another stream may be handed out here: the server's limit counts every stream
    /// handed out, and the exchanges still waiting for the connection.
    var hasRoom: Bool {
        !self.isClosed && self.machine.acceptsNewStreams
            && self.attached.count + self.waiters.count + self.arriving.count < self.machine.streamLimit
    }

    // MARK: Making the connection

    /// Connects (ALPN `h2, http/1.1` for https, the preface at once for http); `waiter` gets the
    /// first stream, or the connection itself when the server chose HTTP/1.1 (nil: a connection
    /// made for streams moved from another).
    func connect(_ waiter: HTTP2UpstreamPool.Waiter?) {
        if let waiter { self.waiters.append(waiter) }
        self.pool.connector.connect(to: self.origin, on: self.pool.loop, offeringHTTP2: true) { result in
            switch result {
            case .success(let stream):
                if self.origin.isHTTPS && stream.tls?.negotiatedProtocol != "h2" {
                    self.serverChoseHTTP1(stream)
                } else {
                    self.connected(stream)
                }
            case .failure(let error):
                self.isClosed = true
                self.pool.remove(self)
                let waiters = self.waiters
                self.waiters.removeAll()
                for waiter in waiters { waiter.deliver(.failed(error)) }
                for stream in self.takeArriving() { stream.fail() }
            }
        }
    }

    /// Adds a waiter while the connection is being made.
    func wait(_ waiter: HTTP2UpstreamPool.Waiter) {
        if self.stream != nil {
            waiter.deliver(.stream(self.makeStream()))
        } else {
            self.waiters.append(waiter)
        }
    }

    private func connected(_ stream: StreamConnection) {
        self.stream = stream
        stream.delegate = self
        stream.write(HTTP2.clientPreface)
        self.write(self.machine.start())
        let waiters = self.waiters
        self.waiters.removeAll()
        for waiter in waiters where !waiter.isCancelled { waiter.deliver(.stream(self.makeStream())) }
        for arriving in self.takeArriving() { self.adopt(arriving) }
        self.flush()
        _ = self.pool.loop.schedule(after: self.pool.settingsTimeout) { [weak self] in self?.settingsTimedOut() }
    }

    /// The server did not answer the preface with SETTINGS in time: no HTTP/2 server (an
    /// HTTP/1.1 one given `upstream_http2 = on`, say). Its streams fail: each exchange answers 502.
    private func settingsTimedOut() {
        guard !self.isClosed, !self.machine.hasReceivedSettings else { return }
        self.pool.logger.warn(
            "upstream did not answer the HTTP/2 preface with SETTINGS: is it an HTTP/2 server? (upstream_http2 = on speaks HTTP/2 to http:// upstreams with prior knowledge)",
            ["upstream": self.origin.description, "upstream_connect_timeout": "\(self.pool.settingsTimeout)"]
        )
        self.close()
    }

    /// ALPN chose HTTP/1.1: the first waiter gets the connection as a plain one, the others make
    /// their own, and the origin is spoken to in HTTP/1.1 from now on.
    private func serverChoseHTTP1(_ stream: StreamConnection) {
        self.isClosed = true
        self.pool.remove(self)
        self.pool.originSpeaksHTTP1(self.origin)
        var waiters = self.waiters.filter { !$0.isCancelled }[...]
        self.waiters.removeAll()
        if let first = waiters.popFirst() {
            first.deliver(.http1(stream))
        } else {
            stream.close()
        }
        for waiter in waiters { waiter.deliver(.http1(nil)) }
        for arriving in self.takeArriving() { arriving.fail() }
    }

    private func takeArriving() -> [HTTP2UpstreamStream] {
        let arriving = self.arriving
        self.arriving.removeAll()
        return arriving
    }

    // MARK: Streams

    /// A new stream for an exchange: the near end of its pipe.
    private func makeStream() -> StreamConnection {
        let (near, far) = StreamConnection.pipe(on: self.pool.loop, capacity: HTTP2UpstreamStream.pipeCapacity)
        let stream = HTTP2UpstreamStream(pipe: far, origin: self.origin, maxHeaderBytes: self.pool.maxHeaderBytes)
        stream.connection = self
        self.attached[ObjectIdentifier(stream)] = stream
        stream.start()
        return near
    }

    /// Takes a stream from another connection (it is sent again from its head).
    func adopt(_ stream: HTTP2UpstreamStream) {
        guard self.stream != nil else {
            self.arriving.append(stream)
            return
        }
        self.attached[ObjectIdentifier(stream)] = stream
        stream.reopen(on: self)
    }

    /// A stream's request head arrived: it opens now, or when the server's limit allows.
    func streamReady(_ stream: HTTP2UpstreamStream) {
        guard self.machine.acceptsNewStreams, !self.isClosed else {
            self.attached[ObjectIdentifier(stream)] = nil
            return self.pool.reattach(stream)
        }
        if self.machine.canOpenStream {
            self.openStream(stream)
        } else {
            self.queued.append(stream)
        }
    }

    private func openStream(_ stream: HTTP2UpstreamStream) {
        guard let request = stream.request else { preconditionFailure("Invalid state: a stream opened without a head") }
        let endStream = stream.requestIsOnlyAHead
        let (streamID, frame) = self.machine.openStream(
            request,
            endStream: endStream,
            isHeadRequest: stream.isHeadRequest
        )
        self.open[streamID] = stream
        stream.opened(streamID, endStream: endStream)
        self.write([frame])
        stream.sendRequestBody()
        self.flush()
    }

    /// A stream ended (its response, or a failure): it is forgotten, and a queued one may open.
    func streamDetached(_ stream: HTTP2UpstreamStream) {
        self.attached[ObjectIdentifier(stream)] = nil
        if let streamID = stream.streamID, self.open[streamID] === stream { self.open[streamID] = nil }
        self.queued.removeAll { $0 === stream }
        self.openQueued()
        if self.machine.isFinished && self.attached.isEmpty { self.close() }
    }

    /// Opens the streams waiting for the server's SETTINGS or for room under its limit.
    private func openQueued() {
        while !self.queued.isEmpty && self.machine.canOpenStream { self.openStream(self.queued.removeFirst()) }
    }

    /// A stream failed here: sent again elsewhere when the server never processed it and its whole
    /// request is still at hand, else its exchange sees the connection reset.
    private func streamFailed(_ stream: HTTP2UpstreamStream, retryable: Bool) {
        if retryable && stream.isRetryable && stream.reopenings < 3 {
            self.attached[ObjectIdentifier(stream)] = nil
            stream.connection = nil
            self.pool.reattach(stream)
        } else {
            stream.fail()
        }
    }

    // MARK: Input

    private func pump() {
        guard !self.isClosed, !self.isPumping, let stream = self.stream else { return }
        self.isPumping = true
        defer { self.isPumping = false }
        while !self.isClosed {
            var data = ByteBuffer()
            let event: HTTP2FrameParserEvent
            do throws(HTTP2ConnectionError) {
                event = try stream.inbound.parseNext(payload: { data.writeBytes($0) }) {
                    raw throws(HTTP2ConnectionError) in try self.parser.next(raw)
                }
            } catch {
                self.pool.logger.warn(
                    "HTTP/2 upstream connection error",
                    ["upstream": self.origin.description, "error": error.message]
                )
                self.perform(self.machine.connectionFailed(error))
                break
            }
            if case .needMore = event.kind { break }
            self.perform(self.machine.received(event), data: data)
        }
        self.openQueued()
        self.flush()
        if stream.hasReadEnded && !self.isClosed { self.close() }
        if self.machine.isFinished && self.attached.isEmpty { self.close() }
    }

    // MARK: Actions

    func perform(_ action: HTTP2ClientConnectionStateMachine.Action, data: ByteBuffer = ByteBuffer()) {
        switch action {
        case .nothing:
            break
        case .write(let frames):
            self.write(frames)
        case .responseHead(let streamID, let head, let endStream):
            self.open[streamID]?.responseHead(head, endStream: endStream)
        case .responseData(let streamID, let count, let endStream, let frames):
            self.write(frames)
            data.withUnsafeReadableBytes { bytes in
                self.open[streamID]?.responseData(
                    UnsafeRawBufferPointer(rebasing: bytes.prefix(count)),
                    endStream: endStream
                )
            }
        case .responseTrailers(let streamID, let trailers):
            if trailers.endsWithGRPCUnauthenticated { self.pool.grpcUnauthenticatedUnreplayable() }
            self.open[streamID]?.responseTrailers(trailers) { self.pool.trailersDropped() }
        case .streamFailed(let streamID, let code, let retryable, let frames):
            self.write(frames)
            self.pool.logger.debug(
                "HTTP/2 upstream stream reset",
                ["upstream": self.origin.description, "stream": "\(streamID)", "code": "\(code)"]
            )
            if let stream = self.open.removeValue(forKey: streamID) { self.streamFailed(stream, retryable: retryable) }
        case .resumeSending:
            for stream in self.open.values { stream.sendRequestBody() }
        case .goAwayReceived(let code, let unprocessed):
            self.pool.logger.debug(
                "HTTP/2 upstream sent GOAWAY",
                ["upstream": self.origin.description, "code": "\(code)", "unprocessed": "\(unprocessed.count)"]
            )
            self.pool.remove(self)
            for streamID in unprocessed {
                if let stream = self.open.removeValue(forKey: streamID) { self.streamFailed(stream, retryable: true) }
            }
            let queued = self.queued
            self.queued.removeAll()
            for stream in queued { self.streamFailed(stream, retryable: true) }
        case .closeConnection(let frames, _):
            self.write(frames)
            self.close()
        }
    }

    func write(_ frames: [HTTP2Frame]) {
        guard !frames.isEmpty else { return }
        self.stream?.writeFrames(frames, maxFrameSize: self.machine.peerMaxFrameSize)
    }

    func flush() {
        guard let stream = self.stream else { return }
        stream.flush()
        if stream.pendingWriteBytes == 0 { self.machine.outboundFlushed() }
    }

    /// Ends the connection: every stream still attached fails (its exchange sees a reset).
    func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.pool.remove(self)
        let streams = Array(self.attached.values) + self.queued
        self.attached.removeAll()
        self.open.removeAll()
        self.queued.removeAll()
        for stream in streams { stream.fail() }
        self.stream?.closeAfterFlush()
    }
}

extension HTTP2UpstreamConnection: StreamConnectionDelegate {
    func streamReceived(_ connection: StreamConnection) { self.pump() }
    func streamReadEnded(_ connection: StreamConnection) { self.pump() }
    func streamWritable(_ connection: StreamConnection) {
        for stream in self.open.values { stream.sendRequestBody() }
        self.flush()
    }
    func streamConnected(_ connection: StreamConnection) {}
    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        if !self.isClosed {
            self.pool.logger.debug(
                "HTTP/2 upstream connection closed",
                ["upstream": self.origin.description, "error": error.map { "\($0)" } ?? "-"]
            )
        }
        self.close()
    }
}

@available(*, unavailable)
extension HTTP2UpstreamConnection: Sendable {}
