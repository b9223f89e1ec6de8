/// The server side of one HTTP/2 connection (RFC 9113 §3–§6) as a value: parser events and the
/// exchange's progress in, actions out; no I/O, no clock.
///
/// It owns what must be shared by every stream: both HPACK contexts (a header block is decoded even
/// for a stream about to be refused, or the tables drift apart), the streams' states and both
/// directions' flow-control windows, the peer's settings, and the defences as counters with bounds:
/// - REFUSED_STREAM past SETTINGS_MAX_CONCURRENT_STREAMS;
/// - rapid reset (CVE-2023-44487, and streams the client makes the server reset): a budget of
///   `maxRapidResets` spent by each stream that ends in a reset and earned back by each that
///   completes, so that cancelling now and then is free and a flood of opened-and-reset streams
///   meets GOAWAY ENHANCE_YOUR_CALM, with no clock needed;
/// - SETTINGS and PING floods: acknowledgements owed and not yet flushed (`outboundFlushed`) are
///   bounded, so a client that sends and never reads cannot grow the write queue;
/// - header blocks (CONTINUATION floods, HPACK bombs) are bounded by the parser and the decoder with
///   `maxHeaderBytes`.
/// Timeouts (SETTINGS ack, idle, a zero window held forever) are the owner's, which has the clock.
package struct HTTP2ServerConnectionStateMachine: Sendable {
    /// Valid transitions: awaitingPreface → awaitingSettings → open → draining → closed; any → closed
    /// on a connection error.
    enum State: Equatable, Sendable {
        case awaitingPreface
        /// The preface arrived; the client's first frame must be SETTINGS (§3.4).
        case awaitingSettings
        case open
        /// GOAWAY was sent or received: streams up to `lastStreamID` finish, no new one starts.
        case draining(lastStreamID: UInt32)
        case closed
    }

    package let configuration: Configuration
    private(set) var state = State.awaitingPreface
    /// The streams, HPACK contexts, windows and settings, kept as the client role keeps them.
    private var core: HTTP2ConnectionCore
    /// The highest stream id the client opened (or tried to): ids above it are idle.
    private(set) var highestStreamID: UInt32 = 0
    private var resetBudget: Int

    package init(configuration: Configuration = Configuration()) {
        precondition(configuration.initialWindowSize >= HTTP2.defaultInitialWindowSize)
        precondition(configuration.connectionWindowSize >= HTTP2.defaultInitialWindowSize)
        self.configuration = configuration
        self.core = HTTP2ConnectionCore(
            maxHeaderBytes: configuration.maxHeaderBytes,
            connectionWindowSize: configuration.connectionWindowSize,
            maxPendingAcknowledgements: configuration.maxPendingAcknowledgements
        )
        self.resetBudget = configuration.maxRapidResets
    }

    /// Streams open or half-closed: what SETTINGS_MAX_CONCURRENT_STREAMS counts (§5.1.2).
    package var activeStreamCount: Int { self.core.streams.count }

    /// The client's SETTINGS_MAX_FRAME_SIZE: the largest frame the serializer may write to it.
    package var peerMaxFrameSize: Int { self.core.peerSettings.maxFrameSize }

    // MARK: Events from the client

    /// An event of the frame parser arrived (`HTTP2FrameParser.next`); a DATA frame's data is the
    /// event's payload.
    package mutating func received(_ event: HTTP2FrameParserEvent) -> Action {
        switch event.kind {
        case .needMore:
            return .nothing
        case .preface:
            guard self.state == .awaitingPreface else { preconditionFailure("Invalid state: \(self.state)") }
            self.state = .awaitingSettings
            return .write(
                HTTP2ConnectionCore.openingFrames(
                    self.configuration.settings,
                    connectionWindowSize: self.configuration.connectionWindowSize
                )
            )
        case .streamError(let error):
            return self.streamFailed(error)
        case .frame(let frame):
            switch self.state {
            case .awaitingPreface:
                preconditionFailure("Invalid state: a frame before the preface (the parser reads the preface first)")
            case .closed:
                return .nothing
            case .awaitingSettings:
                guard case .settings = frame else { return self.connectionFailed(.firstFrameNotSettings) }
                self.state = .open
            case .open, .draining:
                break
            }
            return self.frameReceived(frame, dataLength: event.payload?.count ?? 0)
        }
    }

    /// The parser threw: the connection ends with GOAWAY.
    package mutating func connectionFailed(_ error: HTTP2ConnectionError) -> Action {
        if self.state == .closed { return .nothing }
        self.state = .closed
        _ = self.core.removeAllStreams()
        let goAway = HTTP2Frame.goAway(
            lastStreamID: self.highestStreamID,
            code: error.code,
            debugData: Array(error.message.utf8)
        )
        return .closeConnection(write: [goAway])
    }

    private mutating func frameReceived(_ frame: HTTP2Frame, dataLength: Int) -> Action {
        switch frame {
        case .data(let streamID, let endStream, let length):
            return self.dataReceived(streamID, endStream: endStream, flowControlled: length, data: dataLength)
        case .headers(let headers):
            return self.headersReceived(headers)
        case .priority:
            return .nothing
        case .rstStream(let streamID, _):
            return self.resetReceived(streamID)
        case .settings(let settings):
            return self.settingsReceived(settings)
        case .settingsAck:
            return .nothing
        case .ping(let ack, let data):
            if ack { return .nothing }
            return self.acknowledge(.ping(ack: true, opaqueData: data), flood: .pingFlood)
        case .goAway:
            if case .open = self.state { self.state = .draining(lastStreamID: self.highestStreamID) }
            return self.core.streams.isEmpty ? self.close(write: []) : .nothing
        case .windowUpdate(let streamID, let increment):
            return self.windowUpdateReceived(streamID, increment: increment)
        }
    }

    private mutating func headersReceived(_ frame: HTTP2HeadersFrame) -> Action {
        let list: HeaderList
        do {
            list = try self.core.decoder.decode(frame.block)
        } catch {
            return self.connectionFailed(.compression(error))
        }
        let streamID = frame.streamID
        if frame.dependsOnItself { return self.streamFailed(HTTP2StreamError(streamID: streamID, .dependsOnItself)) }
        if let stream = self.core[streamID] {
            return self.trailersReceived(streamID, stream, list, endStream: frame.endStream)
        }
        if streamID <= self.highestStreamID {
            // A HEADERS that opens no new stream: in flight towards a stream this side reset, or one
            // past a GOAWAY, is ignored; anything else reuses a closed stream's id (§5.1.1).
            if self.core.wasRecentlyReset(streamID) { return .nothing }
            if case .draining(let lastStreamID) = self.state, streamID > lastStreamID { return .nothing }
            return self.connectionFailed(.streamIDNotIncreasing(streamID))
        }
        if streamID % 2 == 0 { return self.connectionFailed(.evenStreamIDFromClient(streamID)) }
        self.highestStreamID = streamID
        if case .draining(let lastStreamID) = self.state, streamID > lastStreamID { return .nothing }
        if self.core.streams.count >= self.configuration.maxConcurrentStreams {
            self.noteReset(streamID)
            return .write([.rstStream(streamID: streamID, code: .refusedStream)])
        }
        let head: HTTP2RequestHead
        do {
            head = try HTTP2RequestHead(validating: list)
        } catch {
            return self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(error)))
        }
        let stream = HTTP2StreamState(
            phase: frame.endStream ? .halfClosedRemote : .open,
            sendWindow: HTTP2FlowControlWindow(size: self.core.peerSettings.initialWindowSize),
            receiveWindow: HTTP2FlowControlWindow(size: self.configuration.initialWindowSize),
            contentLength: ContentLengthCheck(declared: head.contentLength)
        )
        if frame.endStream {
            do {
                try stream.contentLength.streamEnded()
            } catch {
                return self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(error)))
            }
        }
        self.core[streamID] = stream
        return .startRequest(streamID: streamID, head: head, endStream: frame.endStream)
    }

    /// A second HEADERS on a stream: trailers, which must end the stream (§8.1).
    private mutating func trailersReceived(
        _ streamID: UInt32,
        _ stream: HTTP2StreamState,
        _ list: HeaderList,
        endStream: Bool
    ) -> Action {
        guard stream.isReceiving else {
            return self.streamFailed(HTTP2StreamError(streamID: streamID, .closed(.headers)))
        }
        do throws(HeaderValidationError) {
            guard endStream else { throw .trailersWithoutEndStream }
            try validateTrailers(list)
            try stream.contentLength.streamEnded()
        } catch {
            return self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(error)))
        }
        self.remoteEnded(streamID)
        return .forwardTrailers(streamID: streamID, trailers: list)
    }

    private mutating func dataReceived(_ streamID: UInt32, endStream: Bool, flowControlled: Int, data: Int) -> Action {
        guard self.core.connectionDataReceived(flowControlled) else {
            return self.connectionFailed(.flowControlWindowExceeded)
        }
        guard var stream = self.core[streamID] else {
            if streamID > self.highestStreamID { return self.connectionFailed(.frameOnIdleStream(.data, streamID)) }
            let credit = self.releaseConnection(flowControlled)
            let action = self.frameOnClosedStream(streamID, .data)
            return Self.adding(credit, to: action)
        }
        guard stream.isReceiving else {
            let credit = self.releaseConnection(flowControlled)
            return Self.adding(credit, to: self.streamFailed(HTTP2StreamError(streamID: streamID, .closed(.data))))
        }
        guard stream.receiveWindow.consume(flowControlled) else {
            let credit = self.releaseConnection(flowControlled)
            let error = HTTP2StreamError(streamID: streamID, .flowControlWindowExceeded)
            return Self.adding(credit, to: self.streamFailed(error))
        }
        do {
            try stream.contentLength.dataReceived(data)
            if endStream { try stream.contentLength.streamEnded() }
        } catch {
            let credit = self.releaseConnection(flowControlled)
            return Self.adding(credit, to: self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(error))))
        }
        // Padding is consumed at once; the data itself when the exchange is done with it.
        let padding = flowControlled - data
        var write: [HTTP2Frame] = []
        if padding > 0, let increment = stream.receiveWindow.release(padding) {
            write.append(.windowUpdate(streamID: streamID, increment: increment))
        }
        self.core[streamID] = stream
        write += self.releaseConnection(padding)
        if endStream { self.remoteEnded(streamID) }
        return .forwardRequestData(streamID: streamID, count: data, endStream: endStream, write: write)
    }

    private mutating func resetReceived(_ streamID: UInt32) -> Action {
        if streamID > self.highestStreamID { return self.connectionFailed(.frameOnIdleStream(.rstStream, streamID)) }
        guard self.core.removeStream(streamID) else { return .nothing }
        if let action = self.spendResetBudget() { return action }
        if case .draining = self.state, self.core.streams.isEmpty { return self.close(write: []) }
        return .cancelRequest(streamID: streamID, write: [])
    }

    private mutating func settingsReceived(_ settings: [HTTP2Setting]) -> Action {
        do {
            try self.core.applyPeerSettings(settings)
        } catch {
            return self.connectionFailed(error)
        }
        return self.acknowledge(.settingsAck, flood: .settingsFlood)
    }

    private mutating func windowUpdateReceived(_ streamID: UInt32, increment: Int) -> Action {
        if streamID > self.highestStreamID {
            return self.connectionFailed(.frameOnIdleStream(.windowUpdate, streamID))
        }
        switch self.core.windowUpdateReceived(streamID, increment: increment) {
        case .grew: return .resumeSending(write: [])
        case .ignored: return .nothing
        case .streamOverflow: return self.streamFailed(HTTP2StreamError(streamID: streamID, .windowOverflow))
        case .connectionOverflow: return self.connectionFailed(.windowOverflow)
        }
    }

    // MARK: Events from the exchanges

    /// The exchange forwarded `count` bytes of a stream's request body: credit goes back to the
    /// client, in batches. Never called, the windows close and the client stops (backpressure).
    package mutating func requestDataConsumed(streamID: UInt32, count: Int) -> Action {
        let write = self.core.dataConsumed(streamID: streamID, count: count)
        return write.isEmpty ? .nothing : .write(write)
    }

    /// Encodes a response head (or trailers, after the head) for a stream. A stream reset meanwhile
    /// takes nothing more: the exchange's late output is dropped.
    package mutating func sendHeaders(streamID: UInt32, _ list: HeaderList, endStream: Bool) -> Action {
        guard let stream = self.core[streamID] else { return .nothing }
        precondition(stream.isSending, "Invalid state: HEADERS for stream \(streamID) after its END_STREAM")
        let block = self.core.encode(list)
        let frame = HTTP2Frame.headers(HTTP2HeadersFrame(streamID: streamID, endStream: endStream, block: block))
        return endStream ? self.localEnded(streamID, write: [frame]) : .write([frame])
    }

    /// How many bytes of response data the stream may send in its next DATA frame now.
    package func sendableByteCount(streamID: UInt32) -> Int {
        self.core.sendableByteCount(streamID: streamID)
    }

    /// A DATA frame of `count` bytes (at most `sendableByteCount`) is being written.
    package mutating func dataSent(streamID: UInt32, count: Int, endStream: Bool) -> Action {
        guard self.core[streamID] != nil else { return .nothing }
        self.core.dataSent(streamID: streamID, count: count)
        return endStream ? self.localEnded(streamID, write: []) : .nothing
    }

    /// The exchange failed (the upstream broke): the stream is reset with `code`.
    package mutating func resetStream(streamID: UInt32, code: HTTP2ErrorCode) -> Action {
        guard self.core.removeStream(streamID) else { return .nothing }
        self.noteReset(streamID)
        let write: [HTTP2Frame] = [.rstStream(streamID: streamID, code: code)]
        if case .draining = self.state, self.core.streams.isEmpty { return self.close(write: write) }
        return .write(write)
    }

    /// Graceful shutdown (SIGTERM, drain): GOAWAY naming the last stream accepted; the streams in
    /// flight finish, and the connection closes after the last one.
    package mutating func startDraining() -> Action {
        guard case .open = self.state else { return .nothing }
        self.state = .draining(lastStreamID: self.highestStreamID)
        let goAway = HTTP2Frame.goAway(lastStreamID: self.highestStreamID, code: .noError, debugData: [])
        return self.core.streams.isEmpty ? self.close(write: [goAway]) : .write([goAway])
    }

    /// No stream was open for the owner's idle timeout: GOAWAY NO_ERROR naming the last stream, and
    /// the connection closes (nothing is in flight to finish).
    package mutating func idleTimedOut() -> Action {
        guard self.core.streams.isEmpty, self.state != .closed else { return .nothing }
        let goAway = HTTP2Frame.goAway(lastStreamID: self.highestStreamID, code: .noError, debugData: [])
        return self.close(write: [goAway])
    }

    /// Everything written so far reached the socket: owed acknowledgements no longer pile up.
    package mutating func outboundFlushed() {
        self.core.outboundFlushed()
    }

    // MARK: Helpers

    private mutating func acknowledge(_ frame: HTTP2Frame, flood: HTTP2ConnectionError) -> Action {
        guard self.core.oweAcknowledgement() else { return self.connectionFailed(flood) }
        return .write([frame])
    }

    /// A stream error: RST_STREAM, the exchange (if any) cancelled, the reset budget spent.
    private mutating func streamFailed(_ error: HTTP2StreamError) -> Action {
        let wasActive = self.core.removeStream(error.streamID)
        self.noteReset(error.streamID)
        if let action = self.spendResetBudget() { return action }
        let write: [HTTP2Frame] = [.rstStream(streamID: error.streamID, code: error.code)]
        if case .draining = self.state, self.core.streams.isEmpty { return self.close(write: write) }
        return wasActive ? .cancelRequest(streamID: error.streamID, write: write) : .write(write)
    }

    /// A frame for a stream that is closed: ignored if this side reset it lately (the client may
    /// not have seen the reset yet), else STREAM_CLOSED (§5.1).
    private mutating func frameOnClosedStream(_ streamID: UInt32, _ type: HTTP2FrameType) -> Action {
        if self.core.wasRecentlyReset(streamID) { return .nothing }
        if case .draining(let lastStreamID) = self.state, streamID > lastStreamID { return .nothing }
        return self.streamFailed(HTTP2StreamError(streamID: streamID, .closed(type)))
    }

    private mutating func spendResetBudget() -> Action? {
        self.resetBudget -= 1
        return self.resetBudget < 0 ? self.connectionFailed(.rapidReset) : nil
    }

    private mutating func noteReset(_ streamID: UInt32) {
        self.core.noteReset(streamID)
    }

    private mutating func remoteEnded(_ streamID: UInt32) {
        switch self.core[streamID]?.phase {
        case .open: self.core[streamID]!.phase = .halfClosedRemote
        case .halfClosedLocal: self.completed(streamID)
        case .halfClosedRemote, nil: preconditionFailure("Invalid state: stream \(streamID) ended twice")
        }
    }

    private mutating func localEnded(_ streamID: UInt32, write: [HTTP2Frame]) -> Action {
        switch self.core[streamID]?.phase {
        case .open: self.core[streamID]!.phase = .halfClosedLocal
        case .halfClosedRemote: self.completed(streamID)
        case .halfClosedLocal, nil: preconditionFailure("Invalid state: stream \(streamID) ended twice")
        }
        if case .draining = self.state, self.core.streams.isEmpty { return self.close(write: write) }
        return write.isEmpty ? .nothing : .write(write)
    }

    /// Both sides ended the stream: it closes, and earns back one reset of the budget.
    private mutating func completed(_ streamID: UInt32) {
        _ = self.core.removeStream(streamID)
        self.resetBudget = min(self.resetBudget + 1, self.configuration.maxRapidResets)
    }

    private mutating func releaseConnection(_ count: Int) -> [HTTP2Frame] {
        self.core.releaseConnection(count)
    }

    private mutating func close(write: [HTTP2Frame]) -> Action {
        self.state = .closed
        return .closeConnection(write: write)
    }

    /// `action` with connection credit written first.
    private static func adding(_ credit: [HTTP2Frame], to action: Action) -> Action {
        guard !credit.isEmpty else { return action }
        switch action {
        case .nothing: return .write(credit)
        case .write(let frames): return .write(credit + frames)
        case .cancelRequest(let streamID, let frames): return .cancelRequest(streamID: streamID, write: credit + frames)
        case .closeConnection(let frames): return .closeConnection(write: credit + frames)
        case .startRequest, .forwardRequestData, .forwardTrailers, .resumeSending:
            preconditionFailure("Invalid state: credit added to \(action)")
        }
    }
}
