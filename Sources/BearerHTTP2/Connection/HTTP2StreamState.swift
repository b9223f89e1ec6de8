/// One stream of a connection (RFC 9113 §5.1), from the request's HEADERS until it closes; either
/// role's machine keeps one per stream ("local" is this side, "remote" the peer).
///
/// Only the states a connection without push meets: open, then half-closed from either side, then
/// closed (removed from the connection's table). Idle and closed streams are not represented:
/// they are the stream ids above, and below, the highest one seen without an entry.
struct HTTP2StreamState: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        /// Both directions open. Valid transitions: .halfClosedRemote, .halfClosedLocal, closed.
        case open
        /// The peer ended its side (END_STREAM received); this side's message is still going. Valid
        /// transitions: closed.
        case halfClosedRemote
        /// This side's message ended (END_STREAM sent); the peer's is still coming. Valid
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
