extension HTTP2ServerConnectionStateMachine {
    /// What the connection's owner must do after an event: write frames, hand a request's parts to
    /// its exchange, or close. `write` frames go out before anything else the action says.
    package enum Action: Equatable, Sendable {
        case nothing
        case write([HTTP2Frame])
        /// A request's head arrived: start its exchange.
        case startRequest(streamID: UInt32, head: HTTP2RequestHead, endStream: Bool)
        /// Forward `count` bytes of the DATA event's payload to the stream's exchange.
        case forwardRequestData(streamID: UInt32, count: Int, endStream: Bool, write: [HTTP2Frame])
        case forwardTrailers(streamID: UInt32, trailers: HeaderList)
        /// The stream ended abnormally (the client reset it, or it broke a rule): cancel its exchange.
        case cancelRequest(streamID: UInt32, write: [HTTP2Frame])
        /// Send windows grew: streams with pending response data may send again.
        case resumeSending(write: [HTTP2Frame])
        /// Write the frames (a GOAWAY, or the last stream's end while draining), then close; every
        /// exchange still running is cancelled.
        case closeConnection(write: [HTTP2Frame])
    }
}
