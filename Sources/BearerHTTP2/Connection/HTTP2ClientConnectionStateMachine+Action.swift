extension HTTP2ClientConnectionStateMachine {
    /// What the connection's owner must do after an event: write frames, hand a response's parts to
    /// the request that waits for it, fail streams, or close. `write` frames go out first.
    package enum Action: Equatable, Sendable {
        case nothing
        case write([HTTP2Frame])
        /// A stream's final response head arrived (interim 1xx heads are not reported).
        case responseHead(streamID: UInt32, head: HTTP2ResponseHead, endStream: Bool)
        /// Pass on `count` bytes of the DATA event's payload to the stream's request.
        case responseData(streamID: UInt32, count: Int, endStream: Bool, write: [HTTP2Frame])
        case responseTrailers(streamID: UInt32, trailers: HeaderList)
        /// The stream ended without its whole response: the server reset it, or broke a rule on it.
        /// `retryable`: the server did not process it (REFUSED_STREAM), so it may be sent again.
        case streamFailed(streamID: UInt32, code: HTTP2ErrorCode, retryable: Bool, write: [HTTP2Frame])
        /// Send windows grew: streams with pending request data may send again.
        case resumeSending
        /// The server is going away: no new stream starts here, and `unprocessed` (above its last
        /// stream id) failed but may be sent again elsewhere (RFC 9113 §6.8).
        case goAwayReceived(code: HTTP2ErrorCode, unprocessed: [UInt32])
        /// Write the frames, then close; `failed` streams end without their response.
        case closeConnection(write: [HTTP2Frame], failed: [UInt32])
    }
}
