/// One stream of the server's connection (RFC 9113 §5.1), from the client's HEADERS until it closes.
///
/// Only the states a server without push meets: open, then half-closed from either side, then
/// closed (removed from the connection's table). Idle and closed streams are not represented:
/// they are the stream ids above, and below, the highest one seen without an entry.
struct HTTP2StreamState: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        /// Both directions open. Valid transitions: .halfClosedRemote, .halfClosedLocal, closed.
        case open
        /// The client ended its side (END_STREAM received); the response is still going. Valid
        /// transitions: closed.
        case halfClosedRemote
        /// The response ended (END_STREAM sent); the request body is still coming. Valid
        /// transitions: closed.
        case halfClosedLocal
    }

    var phase: Phase
    var sendWindow: HTTP2FlowControlWindow
    var receiveWindow: HTTP2FlowControlWindow
    var contentLength: ContentLengthCheck

    var isReceiving: Bool { self.phase != .halfClosedRemote }
    var isSending: Bool { self.phase != .halfClosedLocal }
}
