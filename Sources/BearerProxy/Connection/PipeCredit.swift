import BearerIO

/// Data bytes written into an in-memory pipe and not yet taken out by the far end, so that an
/// HTTP/2 peer is credited (WINDOW_UPDATE) only once they left the pipe: what carries
/// backpressure across it, for a client's request body (`HTTP2StreamExchange`) and an upstream's
/// response body (`HTTP2UpstreamStream`) alike.
struct PipeCredit {
    /// (where the bytes end in the pipe's byte count, how many), oldest first.
    private var uncredited: [(end: Int, count: Int)] = []

    /// `count` data bytes were just written into `pipe` (framing may surround them).
    mutating func written(_ count: Int, into pipe: StreamConnection) {
        self.uncredited.append((pipe.bytesSent + pipe.pendingWriteBytes, count))
    }

    /// The data bytes the far end took out of `pipe` since the last call.
    mutating func taken(from pipe: StreamConnection) -> Int {
        var taken = 0
        while let first = self.uncredited.first, first.end <= pipe.bytesSent {
            taken += first.count
            self.uncredited.removeFirst()
        }
        return taken
    }
}
