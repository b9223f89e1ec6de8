extension HTTP2ClientConnectionStateMachine {
    /// The client side's limits, advertised in its SETTINGS.
    package struct Configuration: Equatable, Sendable {
        /// SETTINGS_INITIAL_WINDOW_SIZE: how much of each response the server may send before this
        /// side passed it on (what bounds a response's buffering when the client reads slowly).
        package var initialWindowSize = HTTP2.defaultInitialWindowSize
        /// The connection's receive window, opened with a WINDOW_UPDATE right after the SETTINGS.
        package var connectionWindowSize = 1 << 20
        /// Bounds a response's header block on the wire and decoded (max_header_bytes).
        package var maxHeaderBytes = 16_384
        /// Streams opened before the server's SETTINGS name its limit.
        package var assumedMaxConcurrentStreams = 100
        /// SETTINGS and PING acknowledgements the server may make this side owe before they were
        /// flushed, before the connection ends with ENHANCE_YOUR_CALM.
        package var maxPendingAcknowledgements = 1_000

        package init() {}

        /// The SETTINGS this side sends after the preface: no push, its window, its header bound.
        var settings: [HTTP2Setting] {
            [
                HTTP2Setting(.enablePush, 0),
                HTTP2Setting(.initialWindowSize, UInt32(self.initialWindowSize)),
                HTTP2Setting(.maxHeaderListSize, UInt32(self.maxHeaderBytes)),
            ]
        }

        /// A frame parser for the server's bytes with this configuration's bounds.
        package func makeFrameParser() -> HTTP2FrameParser {
            HTTP2FrameParser(role: .client, maxHeaderBlockBytes: self.maxHeaderBytes)
        }
    }
}
