import BearerCore
import BearerHTTP2
import BearerIO

/// A client connection that spoke HTTP/2 with prior knowledge: feeds the client's bytes to its
/// `HTTP2ServerConnectionStateMachine` and performs the actions it returns. Nothing is decided here:
/// the machine owns the protocol (streams, windows, defences), and each stream's exchange is an
/// `HTTP2StreamExchange`, served by the machinery an HTTP/1.1 request is.
///
/// The `ClientConnection` that read the preface stays the stream's delegate and keeps the
/// connection's accounting (its close, `open_connections`); it hands every event here. Confined to
/// its loop.
final class HTTP2Connection {
    /// Not counted: the owner holds this object for as long as it exists. `unowned(unsafe)`: a safe
    /// `unowned` one paid an unowned retain on every use.
    unowned(unsafe) let owner: ClientConnection
    let stream: StreamConnection
    @exclusivity(unchecked) var machine: HTTP2ServerConnectionStateMachine
    @exclusivity(unchecked) private var parser: HTTP2FrameParser
    @exclusivity(unchecked) private var exchanges: [UInt32: HTTP2StreamExchange] = [:]
    /// Exchanges of streams that ended cleanly, idle, taken by the next streams (`HTTP2StreamExchange`'s
    /// lanes). No more than streams may be open at once: more would never be taken together.
    @exclusivity(unchecked) private var lanes: [HTTP2StreamExchange] = []
    private let maxLanes: Int
    @exclusivity(unchecked) private var isClosed = false
    @exclusivity(unchecked) private var isPumping = false
    /// A pump waits for this loop turn's end (`pumpAtTurnEnd`).
    @exclusivity(unchecked) private var isPumpScheduled = false
    /// The streams are being walked (`pump`): one that ends waits in `endedWhileSending` to leave
    /// `exchanges`, which removing it from at once copied (a copy of the whole dictionary for each
    /// stream that ended, 2% of a request's CPU).
    @exclusivity(unchecked) private var isSending = false
    @exclusivity(unchecked) private var endedWhileSending: [UInt32] = []
    /// Since when no stream is open (from the preface, then from each last stream's end); nil while
    /// one is. The connection ends after `client_idle_timeout` of it, as an idle HTTP/1.1 one does.
    @exclusivity(unchecked) private var idleSince: Instant?

    init(owner: ClientConnection) {
        self.owner = owner
        self.stream = owner.stream
        var configuration = HTTP2ServerConnectionStateMachine.Configuration()
        configuration.maxHeaderBytes = owner.runtime.maxHeaderBytes
        configuration.maxConcurrentStreams = owner.runtime.configuration.process.maxConcurrentStreams
        self.machine = HTTP2ServerConnectionStateMachine(configuration: configuration)
        self.maxLanes = configuration.maxConcurrentStreams
        self.parser = configuration.makeFrameParser()
        self.idleSince = owner.loop.now
    }

    // MARK: Entry points

    /// Parses what the client sent, lets every stream send what its window allows, flushes.
    func pump() {
        guard !self.isClosed, !self.isPumping else { return }
        self.isPumping = true
        defer { self.isPumping = false }
        self.processClientInput()
        guard !self.isClosed else { return }
        self.isSending = true
        for exchange in self.exchanges.values { exchange.sendResponse() }
        self.isSending = false
        for streamID in self.endedWhileSending { self.exchanges[streamID] = nil }
        self.endedWhileSending.removeAll(keepingCapacity: true)
        self.stream.flush()
        if self.stream.pendingWriteBytes == 0 { self.machine.outboundFlushed() }
        self.stream.setReading(self.stream.pendingWriteBytes <= ClientConnection.highWatermark)
        if self.exchanges.isEmpty && self.machine.activeStreamCount == 0 {
            if self.idleSince == nil { self.idleSince = self.owner.loop.now }
        } else {
            self.idleSince = nil
        }
        self.owner.armTimer()
    }

    /// An exchange's news waits for the end of this loop turn: the answers of every stream that
    /// progressed in the turn then go out in one write, and the streams are walked once. Pumping at
    /// each answer sent one write per answer (one `send` per request, half the proxy's syscalls
    /// under `h2load -m10`) and walked every stream each time.
    func pumpAtTurnEnd() {
        guard !self.isPumpScheduled else { return }
        self.isPumpScheduled = true
        self.owner.loop.defer {
            self.isPumpScheduled = false
            self.pump()
        }
    }

    /// Shutting down: GOAWAY with the last stream id; the streams in flight finish.
    func drain() {
        self.perform(self.machine.startDraining())
        self.pump()
    }

    // MARK: Time

    /// When the owner's timer must fire: the end of `client_idle_timeout` with no stream open, or
    /// a stalled stream's (the client gave it no window, or stopped reading, for that long). nil while
    /// every stream flows.
    var deadline: Instant? {
        var earliest = self.idleSince
        for exchange in self.exchanges.values {
            if let since = exchange.stalledSince { earliest = min(earliest ?? since, since) }
        }
        return earliest.map { $0 + self.owner.machine.settings.clientIdleTimeout }
    }

    /// The owner's timer fired: a connection idle for `client_idle_timeout` ends (GOAWAY NO_ERROR);
    /// else each stream stalled for as long is reset (CANCEL), its exchange and upstream request
    /// cancelled with it, and the others go on.
    func timerFired(now: Instant) {
        let timeout = self.owner.machine.settings.clientIdleTimeout
        if let since = self.idleSince, since + timeout <= now {
            self.owner.runtime.logger.debug("closing idle HTTP/2 client connection")
            return self.perform(self.machine.idleTimedOut())
        }
        for (streamID, exchange) in self.exchanges {
            guard let since = exchange.stalledSince, since + timeout <= now, !self.isClosed else { continue }
            self.owner.runtime.logger.debug(
                "reset an HTTP/2 stream whose response the client took nothing of for client_idle_timeout",
                ["stream": "\(streamID)"]
            )
            self.exchanges[streamID] = nil
            exchange.cancel()
            self.perform(self.machine.resetStream(streamID: streamID, code: .cancel))
        }
        self.pump()
    }

    /// The client's connection is gone: every stream's exchange is cancelled, and the lanes close.
    func closeStreams() {
        self.isClosed = true
        let exchanges = self.exchanges
        self.exchanges.removeAll()
        for exchange in exchanges.values { exchange.cancel() }
        let lanes = self.lanes
        self.lanes.removeAll()
        for lane in lanes { lane.close() }
    }

    // MARK: Input

    private func processClientInput() {
        while !self.isClosed {
            if self.stream.pendingWriteBytes > ClientConnection.highWatermark { return }
            var data = ByteBuffer()
            let event: HTTP2FrameParserEvent
            do throws(HTTP2ConnectionError) {
                event = try self.stream.inbound.parseNext(payload: { data.writeBytes($0) }) {
                    raw throws(HTTP2ConnectionError) in try self.parser.next(raw)
                }
            } catch {
                self.owner.runtime.logger.info("HTTP/2 connection error", ["error": error.message])
                self.perform(self.machine.connectionFailed(error))
                return
            }
            if case .needMore = event.kind {
                if self.stream.hasReadEnded { self.perform(.closeConnection(write: [])) }
                return
            }
            self.perform(self.machine.received(event), data: data)
        }
    }

    // MARK: Actions

    /// Performs an action of the machine; `data` is the DATA event's payload it may forward.
    func perform(_ action: HTTP2ServerConnectionStateMachine.Action, data: ByteBuffer = ByteBuffer()) {
        switch action {
        case .nothing:
            break
        case .write(let frames):
            self.write(frames)
        case .startRequest(let streamID, let head, let endStream):
            let exchange = self.lanes.popLast() ?? HTTP2StreamExchange(connection: self)
            self.exchanges[streamID] = exchange
            exchange.start(streamID: streamID, head: head, endStream: endStream)
        case .forwardRequestData(let streamID, let count, let endStream, let frames):
            self.write(frames)
            guard let exchange = self.exchanges[streamID] else { return self.dropRequestData(streamID, count: count) }
            data.withUnsafeReadableBytes { bytes in
                exchange.requestData(UnsafeRawBufferPointer(rebasing: bytes.prefix(count)), endStream: endStream)
            }
        case .forwardTrailers(let streamID, _):
            // HTTP/1.1 upstreams get no request trailers from here: the body ends where they were,
            // and the trailers are counted as dropped.
            self.owner.context.metrics.trailersDropped += 1
            self.exchanges[streamID]?.requestData(UnsafeRawBufferPointer(start: nil, count: 0), endStream: true)
        case .cancelRequest(let streamID, let frames):
            self.write(frames)
            self.exchanges.removeValue(forKey: streamID)?.cancel()
        case .resumeSending(let frames):
            self.write(frames)
        case .closeConnection(let frames):
            self.write(frames)
            self.closeStreams()
            self.stream.closeAfterFlush()
        }
    }

    func write(_ frames: [HTTP2Frame]) {
        self.stream.writeFrames(frames, maxFrameSize: self.machine.peerMaxFrameSize)
    }

    /// Request body bytes no exchange will take (its answer already went, or it was cancelled) are
    /// dropped and credited at once, for the stream while it still receives and for the connection:
    /// the client may go on sending a body the upstream did not wait for (RFC 9113 §8.1).
    func dropRequestData(_ streamID: UInt32, count: Int) {
        guard count > 0 else { return }
        self.perform(self.machine.requestDataConsumed(streamID: streamID, count: count))
    }

    /// Keeps the lane of a stream that ended cleanly for a next stream; false when it closes instead
    /// (this connection is closing, or enough lanes wait).
    func park(_ lane: HTTP2StreamExchange) -> Bool {
        guard !self.isClosed, self.lanes.count < self.maxLanes else { return false }
        self.lanes.append(lane)
        return true
    }

    /// A parked lane's exchange closed on its own (its idle timeout, a drain).
    func laneClosed(_ lane: HTTP2StreamExchange) {
        guard let index = self.lanes.firstIndex(where: { $0 === lane }) else { return }
        self.lanes.remove(at: index)
    }

    /// A stream's exchange is over (its response ended, or it was reset).
    func exchangeEnded(_ streamID: UInt32) {
        if self.isSending {
            self.endedWhileSending.append(streamID)
        } else {
            self.exchanges[streamID] = nil
        }
    }
}

@available(*, unavailable)
extension HTTP2Connection: Sendable {}

extension StreamConnection {
    /// Serializes frames (all but DATA) into the outbound buffer, at the peer's max frame size.
    func writeFrames(_ frames: [HTTP2Frame], maxFrameSize: Int) {
        self.withOutbound { buffer in
            for frame in frames { HTTP2FrameSerializer.write(frame, maxFrameSize: maxFrameSize, into: &buffer) }
        }
    }
}
