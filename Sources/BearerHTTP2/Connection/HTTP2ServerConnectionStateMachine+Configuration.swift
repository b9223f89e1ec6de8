extension HTTP2ServerConnectionStateMachine {
    /// The server side's limits, advertised in its SETTINGS and enforced as counters.
    package struct Configuration: Equatable, Sendable {
        /// SETTINGS_MAX_CONCURRENT_STREAMS: a stream beyond it is refused (REFUSED_STREAM).
        package var maxConcurrentStreams = 100
        /// SETTINGS_INITIAL_WINDOW_SIZE: each request body's window (at least the default 65 535, so
        /// that a client which has not yet read the SETTINGS never overruns it).
        package var initialWindowSize = HTTP2.defaultInitialWindowSize
        /// The connection's receive window, opened with a WINDOW_UPDATE right after the SETTINGS.
        package var connectionWindowSize = 1 << 20
        /// Bounds a header block on the wire and decoded (max_header_bytes); advertised as
        /// SETTINGS_MAX_HEADER_LIST_SIZE.
        package var maxHeaderBytes = 16_384
        /// Streams the client may reset (or make the server reset) beyond those that completed,
        /// before the connection ends with ENHANCE_YOUR_CALM (rapid reset, CVE-2023-44487).
        package var maxRapidResets = 100
        /// SETTINGS and PING acknowledgements the client may make the server owe before the server
        /// has flushed them, before ENHANCE_YOUR_CALM (SETTINGS and PING floods, CVE-2019-9512/9515).
        package var maxPendingAcknowledgements = 1_000

        package init() {}

        /// The SETTINGS this side sends after the preface.
        var settings: [HTTP2Setting] {
            [
                HTTP2Setting(.maxConcurrentStreams, UInt32(self.maxConcurrentStreams)),
                HTTP2Setting(.initialWindowSize, UInt32(self.initialWindowSize)),
                HTTP2Setting(.maxHeaderListSize, UInt32(self.maxHeaderBytes)),
            ]
        }

        /// A frame parser for the client's bytes with this configuration's bounds.
        package func makeFrameParser() -> HTTP2FrameParser {
            HTTP2FrameParser(role: .server, maxHeaderBlockBytes: self.maxHeaderBytes)
        }
    }
}
