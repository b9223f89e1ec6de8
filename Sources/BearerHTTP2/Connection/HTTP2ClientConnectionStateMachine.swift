/// The client side of one HTTP/2 connection (RFC 9113), the proxy's role towards an upstream, as a
/// value: requests to send and the server's frames in, actions out; no I/O, no clock.
///
/// The mirror of `HTTP2ServerConnectionStateMachine`, sharing its pieces (the frame parser in its
/// client role, both HPACK contexts, `HTTP2FlowControlWindow`, `HTTP2StreamState`, the peer settings
/// update). It opens odd streams within the server's SETTINGS_MAX_CONCURRENT_STREAMS, sends each
/// request's HEADERS (the encoder writes `authorization` never-indexed, RFC 7541 §7.1.3) and DATA
/// within the server's windows, and reads each response's head, DATA and trailers, returning
/// credit only as the owner consumes the data (backpressure). A GOAWAY names the streams the server
/// never processed (above its last stream id: safe to send again, §6.8), as a RST_STREAM
/// REFUSED_STREAM does (§8.7). PUSH_PROMISE is refused (push is disabled in this side's SETTINGS).
package struct HTTP2ClientConnectionStateMachine: Sendable {
    /// Valid transitions: awaitingSettings → open → draining → closed; any → closed on a connection
    /// error. Requests may be sent before the server's SETTINGS arrive (§3.4).
    enum State: Equatable, Sendable {
        case awaitingSettings
        case open
        /// GOAWAY received: streams up to `lastStreamID` finish, no new one starts.
        case draining(lastStreamID: UInt32)
        case closed
    }

    /// What a stream's response has shown so far.
    struct Response: Equatable, Sendable {
        /// A HEAD request's response declares a length it does not carry (RFC 9110 §8.6).
        var isHeadRequest: Bool
        var headReceived = false
    }

    package let configuration: Configuration
    private(set) var state = State.awaitingSettings
    /// The streams, HPACK contexts, windows and settings, kept as the server role keeps them.
    private var core: HTTP2ConnectionCore
    private var responses: [UInt32: Response] = [:]
    /// The highest stream id this side opened: higher ones are idle.
    private(set) var highestStreamID: UInt32 = 0

    package init(configuration: Configuration = Configuration()) {
        precondition(configuration.connectionWindowSize >= HTTP2.defaultInitialWindowSize)
        self.configuration = configuration
        self.core = HTTP2ConnectionCore(
            maxHeaderBytes: configuration.maxHeaderBytes,
            connectionWindowSize: configuration.connectionWindowSize,
            maxPendingAcknowledgements: configuration.maxPendingAcknowledgements
        )
    }

    /// Streams open or half-closed: what the server's SETTINGS_MAX_CONCURRENT_STREAMS counts.
    package var activeStreamCount: Int { self.core.streams.count }

    /// The server's SETTINGS_MAX_FRAME_SIZE: the largest frame the serializer may write to it.
    package var peerMaxFrameSize: Int { self.core.peerSettings.maxFrameSize }

    /// Whether a new stream may start now: the server's SETTINGS arrived (streams wait for them, so
    /// that none is opened past a limit lower than the 100 RFC 9113 §6.5.2 lets a client assume,
    /// which a server would refuse), its SETTINGS_MAX_CONCURRENT_STREAMS is not reached, the
    /// connection is not going away, and stream ids are not exhausted.
    package var canOpenStream: Bool {
        self.state == .open && self.core.streams.count < self.streamLimit
            && self.highestStreamID < UInt32(HTTP2.maxWindowSize) - 2
    }

    /// How many streams the server lets be open at once (its SETTINGS_MAX_CONCURRENT_STREAMS, or
    /// the assumed limit until they arrive).
    package var streamLimit: Int {
        self.core.peerSettings.maxConcurrentStreams ?? self.configuration.assumedMaxConcurrentStreams
    }

    /// Whether the server's first SETTINGS arrived: it speaks HTTP/2.
    package var hasReceivedSettings: Bool { self.state != .awaitingSettings }

    /// Whether new streams may still start on this connection (no GOAWAY received, not closed).
    package var acceptsNewStreams: Bool {
        switch self.state {
        case .awaitingSettings, .open: true
        case .draining, .closed: false
        }
    }

    /// The connection will carry nothing more: closed, or going away with no stream left.
    package var isFinished: Bool {
        switch self.state {
        case .closed: true
        case .draining: self.core.streams.isEmpty
        case .awaitingSettings, .open: false
        }
    }

    // MARK: Events from the owner

    /// The frames that follow the client preface (which the owner writes first, `HTTP2.clientPreface`):
    /// SETTINGS, and the WINDOW_UPDATE that opens the connection's receive window.
    package func start() -> [HTTP2Frame] {
        HTTP2ConnectionCore.openingFrames(
            self.configuration.settings,
            connectionWindowSize: self.configuration.connectionWindowSize
        )
    }

    /// Opens the next stream with a request head (pseudo-header fields first); the HEADERS frame to
    /// write, with END_STREAM when the request has no body. Only when `canOpenStream`.
    package mutating func openStream(
        _ list: HeaderList,
        endStream: Bool,
        isHeadRequest: Bool
    ) -> (streamID: UInt32, frame: HTTP2Frame) {
        precondition(self.canOpenStream, "Invalid state: a stream opened beyond the server's limit")
        let streamID = self.highestStreamID == 0 ? 1 : self.highestStreamID + 2
        self.highestStreamID = streamID
        let block = self.core.encode(list)
        self.core[streamID] = HTTP2StreamState(
            phase: endStream ? .halfClosedLocal : .open,
            sendWindow: HTTP2FlowControlWindow(size: self.core.peerSettings.initialWindowSize),
            receiveWindow: HTTP2FlowControlWindow(size: self.configuration.initialWindowSize),
            contentLength: ContentLengthCheck(declared: nil)
        )
        self.responses[streamID] = Response(isHeadRequest: isHeadRequest)
        let frame = HTTP2Frame.headers(HTTP2HeadersFrame(streamID: streamID, endStream: endStream, block: block))
        return (streamID, frame)
    }

    /// How many bytes of request data the stream may send in its next DATA frame now.
    package func sendableByteCount(streamID: UInt32) -> Int {
        self.core.sendableByteCount(streamID: streamID)
    }

    /// A DATA frame of `count` bytes (at most `sendableByteCount`) is being written.
    package mutating func dataSent(streamID: UInt32, count: Int, endStream: Bool) {
        guard self.core[streamID]?.isSending == true else { return }
        self.core.dataSent(streamID: streamID, count: count)
        if endStream { self.localEnded(streamID) }
    }

    /// Encodes request trailers, which end the stream (RFC 9113 §8.1).
    package mutating func sendTrailers(streamID: UInt32, _ list: HeaderList) -> Action {
        guard self.core[streamID]?.isSending == true else { return .nothing }
        let block = self.core.encode(list)
        self.localEnded(streamID)
        return .write([.headers(HTTP2HeadersFrame(streamID: streamID, endStream: true, block: block))])
    }

    /// The owner passed on `count` bytes of a stream's response data: credit goes back to the
    /// server, in batches. Never called, the windows close and the server stops (backpressure).
    package mutating func responseDataConsumed(streamID: UInt32, count: Int) -> Action {
        let write = self.core.dataConsumed(streamID: streamID, count: count)
        return write.isEmpty ? .nothing : .write(write)
    }

    /// The owner gave up on a stream (its client went away): RST_STREAM with `code`.
    package mutating func resetStream(streamID: UInt32, code: HTTP2ErrorCode) -> Action {
        guard self.removeStream(streamID) else { return .nothing }
        self.core.noteReset(streamID)
        return .write([.rstStream(streamID: streamID, code: code)])
    }

    /// The owner ends the connection (idle, or shutting down): GOAWAY NO_ERROR; every stream fails.
    package mutating func close() -> Action {
        guard self.state != .closed else { return .nothing }
        self.state = .closed
        let failed = self.core.removeAllStreams()
        self.responses.removeAll()
        return .closeConnection(write: [.goAway(lastStreamID: 0, code: .noError, debugData: [])], failed: failed)
    }

    /// Everything written so far reached the socket: owed acknowledgements no longer pile up.
    package mutating func outboundFlushed() {
        self.core.outboundFlushed()
    }

    // MARK: Events from the server

    /// An event of the frame parser arrived (`HTTP2FrameParser.next`, client role); a DATA frame's
    /// data is the event's payload.
    package mutating func received(_ event: HTTP2FrameParserEvent) -> Action {
        switch event.kind {
        case .needMore:
            return .nothing
        case .preface:
            preconditionFailure("Invalid state: a preface from a server (the client-role parser reads none)")
        case .streamError(let error):
            return self.streamFailed(error)
        case .frame(let frame):
            switch self.state {
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

    /// The parser threw, or the server broke a rule: GOAWAY, and every stream fails.
    package mutating func connectionFailed(_ error: HTTP2ConnectionError) -> Action {
        if self.state == .closed { return .nothing }
        self.state = .closed
        let failed = self.core.removeAllStreams()
        self.responses.removeAll()
        let goAway = HTTP2Frame.goAway(lastStreamID: 0, code: error.code, debugData: Array(error.message.utf8))
        return .closeConnection(write: [goAway], failed: failed)
    }

    private mutating func frameReceived(_ frame: HTTP2Frame, dataLength: Int) -> Action {
        switch frame {
        case .data(let streamID, let endStream, let length):
            return self.dataReceived(streamID, endStream: endStream, flowControlled: length, data: dataLength)
        case .headers(let headers):
            return self.headersReceived(headers)
        case .priority, .settingsAck:
            return .nothing
        case .rstStream(let streamID, let code):
            if streamID > self.highestStreamID || streamID % 2 == 0 {
                return self.connectionFailed(.frameOnIdleStream(.rstStream, streamID))
            }
            guard self.removeStream(streamID) else { return .nothing }
            return .streamFailed(streamID: streamID, code: code, retryable: code == .refusedStream, write: [])
        case .settings(let settings):
            do {
                try self.core.applyPeerSettings(settings)
            } catch {
                return self.connectionFailed(error)
            }
            return self.acknowledge(.settingsAck, flood: .settingsFlood)
        case .ping(let ack, let data):
            if ack { return .nothing }
            return self.acknowledge(.ping(ack: true, opaqueData: data), flood: .pingFlood)
        case .goAway(let lastStreamID, let code, _):
            if self.state != .closed { self.state = .draining(lastStreamID: lastStreamID) }
            let unprocessed = self.core.streams.keys.filter { $0 > lastStreamID }.sorted()
            for streamID in unprocessed { _ = self.removeStream(streamID) }
            return .goAwayReceived(code: code, unprocessed: unprocessed)
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
        if streamID > self.highestStreamID || streamID % 2 == 0 {
            return self.connectionFailed(.frameOnIdleStream(.headers, streamID))
        }
        guard let stream = self.core[streamID], let response = self.responses[streamID] else {
            return self.frameOnClosedStream(streamID, .headers)
        }
        guard stream.isReceiving else {
            return self.streamFailed(HTTP2StreamError(streamID: streamID, .closed(.headers)))
        }
        if frame.dependsOnItself { return self.streamFailed(HTTP2StreamError(streamID: streamID, .dependsOnItself)) }
        do throws(HeaderValidationError) {
            if response.headReceived {
                // A second HEADERS: trailers, which must end the stream (§8.1).
                guard frame.endStream else { throw .trailersWithoutEndStream }
                try validateTrailers(list)
                try stream.contentLength.streamEnded()
                self.remoteEnded(streamID)
                return .responseTrailers(streamID: streamID, trailers: list)
            }
            let head = try HTTP2ResponseHead(validating: list)
            if head.status < 200 {
                // An interim response (100 Continue, 103 Early Hints): the final one follows.
                guard !frame.endStream else { throw .invalidStatus }
                return .nothing
            }
            let carriesNoBody = response.isHeadRequest || head.status == 204 || head.status == 304
            let check = ContentLengthCheck(declared: carriesNoBody ? nil : head.contentLength)
            if frame.endStream { try check.streamEnded() }
            self.core[streamID]!.contentLength = check
            self.responses[streamID]!.headReceived = true
            if frame.endStream { self.remoteEnded(streamID) }
            return .responseHead(streamID: streamID, head: head, endStream: frame.endStream)
        } catch {
            return self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(error)))
        }
    }

    private mutating func dataReceived(_ streamID: UInt32, endStream: Bool, flowControlled: Int, data: Int) -> Action {
        guard self.core.connectionDataReceived(flowControlled) else {
            return self.connectionFailed(.flowControlWindowExceeded)
        }
        if streamID > self.highestStreamID || streamID % 2 == 0 {
            return self.connectionFailed(.frameOnIdleStream(.data, streamID))
        }
        let credit = self.releaseConnection(flowControlled - data)
        guard var stream = self.core[streamID], self.responses[streamID]?.headReceived == true else {
            let action =
                self.core[streamID] == nil
                ? self.frameOnClosedStream(streamID, .data)
                : self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(.dataBeforeHeaders)))
            return Self.adding(credit + self.releaseConnection(data), to: action)
        }
        guard stream.isReceiving, stream.receiveWindow.consume(flowControlled) else {
            let reason: HTTP2StreamError.Reason =
                stream.isReceiving ? .flowControlWindowExceeded : .closed(.data)
            return Self.adding(
                credit + self.releaseConnection(data),
                to: self.streamFailed(HTTP2StreamError(streamID: streamID, reason))
            )
        }
        do {
            try stream.contentLength.dataReceived(data)
            if endStream { try stream.contentLength.streamEnded() }
        } catch {
            return Self.adding(
                credit + self.releaseConnection(data),
                to: self.streamFailed(HTTP2StreamError(streamID: streamID, .malformed(error)))
            )
        }
        // Padding is consumed at once; the data itself when the owner passed it on.
        var write = credit
        let padding = flowControlled - data
        if padding > 0, let increment = stream.receiveWindow.release(padding) {
            write.append(.windowUpdate(streamID: streamID, increment: increment))
        }
        self.core[streamID] = stream
        if endStream { self.remoteEnded(streamID) }
        return .responseData(streamID: streamID, count: data, endStream: endStream, write: write)
    }

    private mutating func windowUpdateReceived(_ streamID: UInt32, increment: Int) -> Action {
        if streamID > self.highestStreamID { return self.connectionFailed(.frameOnIdleStream(.windowUpdate, streamID)) }
        switch self.core.windowUpdateReceived(streamID, increment: increment) {
        case .grew: return .resumeSending
        case .ignored: return .nothing
        case .streamOverflow: return self.streamFailed(HTTP2StreamError(streamID: streamID, .windowOverflow))
        case .connectionOverflow: return self.connectionFailed(.windowOverflow)
        }
    }

    // MARK: Helpers

    private mutating func acknowledge(_ frame: HTTP2Frame, flood: HTTP2ConnectionError) -> Action {
        guard self.core.oweAcknowledgement() else { return self.connectionFailed(flood) }
        return .write([frame])
    }

    /// A stream error: RST_STREAM, and the stream fails (not retryable: the server may have acted).
    private mutating func streamFailed(_ error: HTTP2StreamError) -> Action {
        let wasActive = self.removeStream(error.streamID)
        self.core.noteReset(error.streamID)
        let write: [HTTP2Frame] = [.rstStream(streamID: error.streamID, code: error.code)]
        guard wasActive else { return .write(write) }
        return .streamFailed(streamID: error.streamID, code: error.code, retryable: false, write: write)
    }

    /// A frame for a stream that is closed: ignored if this side reset it lately or the server
    /// refused it with its GOAWAY, else STREAM_CLOSED (§5.1).
    private mutating func frameOnClosedStream(_ streamID: UInt32, _ type: HTTP2FrameType) -> Action {
        if self.core.wasRecentlyReset(streamID) { return .nothing }
        if case .draining(let lastStreamID) = self.state, streamID > lastStreamID { return .nothing }
        return self.streamFailed(HTTP2StreamError(streamID: streamID, .closed(type)))
    }

    /// Forgets a stream; false when it was not open.
    private mutating func removeStream(_ streamID: UInt32) -> Bool {
        self.responses[streamID] = nil
        return self.core.removeStream(streamID)
    }

    private mutating func remoteEnded(_ streamID: UInt32) {
        switch self.core[streamID]?.phase {
        case .open: self.core[streamID]!.phase = .halfClosedRemote
        case .halfClosedLocal: _ = self.removeStream(streamID)
        case .halfClosedRemote, nil: preconditionFailure("Invalid state: stream \(streamID) ended twice")
        }
    }

    private mutating func localEnded(_ streamID: UInt32) {
        switch self.core[streamID]?.phase {
        case .open: self.core[streamID]!.phase = .halfClosedLocal
        case .halfClosedRemote: _ = self.removeStream(streamID)
        case .halfClosedLocal, nil: preconditionFailure("Invalid state: stream \(streamID) ended twice")
        }
    }

    private mutating func releaseConnection(_ count: Int) -> [HTTP2Frame] {
        self.core.releaseConnection(count)
    }

    /// `action` with connection credit written first.
    private static func adding(_ credit: [HTTP2Frame], to action: Action) -> Action {
        guard !credit.isEmpty else { return action }
        switch action {
        case .nothing: return .write(credit)
        case .write(let frames): return .write(credit + frames)
        case .streamFailed(let streamID, let code, let retryable, let frames):
            return .streamFailed(streamID: streamID, code: code, retryable: retryable, write: credit + frames)
        case .closeConnection(let frames, let failed): return .closeConnection(write: credit + frames, failed: failed)
        case .responseHead, .responseData, .responseTrailers, .resumeSending, .goAwayReceived:
            preconditionFailure("Invalid state: credit added to \(action)")
        }
    }
}
