/// What both roles of an HTTP/2 connection keep alike (RFC 9113 §5, §6.5, §6.9): the streams, both
/// HPACK contexts, both directions' connection windows, the peer's settings, the acknowledgements
/// owed, and the streams reset lately. `HTTP2ServerConnectionStateMachine` and
/// `HTTP2ClientConnectionStateMachine` each hold one and decide the rest (who opens streams, which
/// head is a request and which a response) themselves.
struct HTTP2ConnectionCore: Sendable {
    private(set) var streams: [UInt32: HTTP2StreamState] = [:]
    private(set) var peerSettings = HTTP2Settings()
    var decoder: HPACKDecoder
    private var encoder = HPACKEncoder()
    private var connectionSendWindow = HTTP2FlowControlWindow(size: HTTP2.defaultInitialWindowSize)
    private var connectionReceiveWindow: HTTP2FlowControlWindow
    private var pendingAcknowledgements = 0
    private let maxPendingAcknowledgements: Int
    /// Streams this side reset lately, whose in-flight frames are ignored (§5.1 "closed"), oldest first.
    private var recentlyReset: [UInt32] = []

    init(maxHeaderBytes: Int, connectionWindowSize: Int, maxPendingAcknowledgements: Int) {
        self.decoder = HPACKDecoder(maxHeaderListSize: maxHeaderBytes)
        self.connectionReceiveWindow = HTTP2FlowControlWindow(size: connectionWindowSize)
        self.maxPendingAcknowledgements = maxPendingAcknowledgements
    }

    subscript(streamID: UInt32) -> HTTP2StreamState? {
        get { self.streams[streamID] }
        set { self.streams[streamID] = newValue }
    }

    /// Forgets a stream; false when it was not open.
    mutating func removeStream(_ streamID: UInt32) -> Bool {
        self.streams.removeValue(forKey: streamID) != nil
    }

    /// Forgets every stream; their ids, in order.
    mutating func removeAllStreams() -> [UInt32] {
        let ids = self.streams.keys.sorted()
        self.streams.removeAll()
        return ids
    }

    /// What either side sends first (after the client's preface): its SETTINGS, and a WINDOW_UPDATE
    /// that opens the connection's receive window past the initial 65 535 bytes.
    static func openingFrames(_ settings: [HTTP2Setting], connectionWindowSize: Int) -> [HTTP2Frame] {
        let opening = connectionWindowSize - HTTP2.defaultInitialWindowSize
        var frames: [HTTP2Frame] = [.settings(settings)]
        if opening > 0 { frames.append(.windowUpdate(streamID: 0, increment: opening)) }
        return frames
    }

    // MARK: Header blocks

    /// A header block for `list` (`authorization` always never-indexed, `HPACKEncoder`).
    mutating func encode(_ list: HeaderList) -> [UInt8] {
        var block: [UInt8] = []
        self.encoder.encode(list, into: &block)
        return block
    }

    // MARK: Settings and acknowledgements

    /// The peer's SETTINGS: every open stream's send window moves by a SETTINGS_INITIAL_WINDOW_SIZE
    /// change (and may go negative, §6.9.2), the encoder follows SETTINGS_HEADER_TABLE_SIZE.
    mutating func applyPeerSettings(_ settings: [HTTP2Setting]) throws(HTTP2ConnectionError) {
        for setting in settings {
            if setting.identifier == .initialWindowSize {
                let delta = Int(setting.value) - self.peerSettings.initialWindowSize
                for streamID in Array(self.streams.keys) {
                    guard self.streams[streamID]!.sendWindow.grow(by: delta) else { throw .windowOverflow }
                }
            }
            if setting.identifier == .headerTableSize { self.encoder.setMaxTableSize(Int(setting.value)) }
            self.peerSettings.apply(setting)
        }
    }

    /// One more SETTINGS or PING acknowledgement owed; false past the bound (a flood).
    mutating func oweAcknowledgement() -> Bool {
        self.pendingAcknowledgements += 1
        return self.pendingAcknowledgements <= self.maxPendingAcknowledgements
    }

    /// Everything written so far reached the socket: owed acknowledgements no longer pile up.
    mutating func outboundFlushed() {
        self.pendingAcknowledgements = 0
    }

    // MARK: Resets

    mutating func noteReset(_ streamID: UInt32) {
        if self.recentlyReset.count >= 64 { self.recentlyReset.removeFirst() }
        self.recentlyReset.append(streamID)
    }

    func wasRecentlyReset(_ streamID: UInt32) -> Bool { self.recentlyReset.contains(streamID) }

    // MARK: Sending

    /// How many bytes of data the stream may send in its next DATA frame now.
    func sendableByteCount(streamID: UInt32) -> Int {
        guard let stream = self.streams[streamID], stream.isSending else { return 0 }
        return max(0, min(self.connectionSendWindow.size, stream.sendWindow.size, self.peerSettings.maxFrameSize))
    }

    /// A DATA frame of `count` bytes (at most `sendableByteCount`) is being written.
    mutating func dataSent(streamID: UInt32, count: Int) {
        precondition(count == 0 || count <= self.sendableByteCount(streamID: streamID), "DATA past the window")
        _ = self.connectionSendWindow.consume(count)
        _ = self.streams[streamID]!.sendWindow.consume(count)
    }

    /// A WINDOW_UPDATE arrived; the stream error or connection error it causes, if any.
    enum WindowUpdateOutcome {
        case grew
        case ignored
        case streamOverflow
        case connectionOverflow
    }

    mutating func windowUpdateReceived(_ streamID: UInt32, increment: Int) -> WindowUpdateOutcome {
        if streamID == 0 { return self.connectionSendWindow.grow(by: increment) ? .grew : .connectionOverflow }
        guard self.streams[streamID] != nil else { return .ignored }
        return self.streams[streamID]!.sendWindow.grow(by: increment) ? .grew : .streamOverflow
    }

    // MARK: Receiving

    /// Takes a DATA frame's flow-controlled length out of the connection's window; false when it
    /// does not fit (a connection error).
    mutating func connectionDataReceived(_ flowControlled: Int) -> Bool {
        self.connectionReceiveWindow.consume(flowControlled)
    }

    /// `count` received bytes were passed on: credit goes back to the peer, in batches, for the
    /// stream (while it still receives) and the connection.
    mutating func dataConsumed(streamID: UInt32, count: Int) -> [HTTP2Frame] {
        var write: [HTTP2Frame] = []
        if self.streams[streamID]?.isReceiving == true,
            let increment = self.streams[streamID]!.receiveWindow.release(count)
        {
            write.append(.windowUpdate(streamID: streamID, increment: increment))
        }
        return write + self.releaseConnection(count)
    }

    /// Connection credit for bytes this side is done with (data of a closed stream, padding).
    mutating func releaseConnection(_ count: Int) -> [HTTP2Frame] {
        guard count > 0, let increment = self.connectionReceiveWindow.release(count) else { return [] }
        return [.windowUpdate(streamID: 0, increment: increment)]
    }
}
