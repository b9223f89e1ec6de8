import BearerIO

/// Data bytes handed to the far end of an in-memory path and not yet taken out by it, so that an
/// HTTP/2 peer is credited (WINDOW_UPDATE) only once they left: what carries backpressure across
/// it, for a client's request body (`HTTP2StreamExchange`, whose exchange reads them out of its
/// inbound buffer) and an upstream's response body (`HTTP2UpstreamStream`, across a pipe) alike.
struct PipeCredit {
    /// (where the bytes end in the count of bytes handed over, how many), oldest first.
    private var uncredited: [(end: Int, count: Int)] = []

    /// `count` data bytes were just handed over, ending at byte `end` of everything handed over
    /// (framing may surround them).
    mutating func written(_ count: Int, endingAt end: Int) {
        self.uncredited.append((end, count))
    }

    /// The data bytes among the first `taken` bytes handed over, since the last call.
    mutating func taken(upTo taken: Int) -> Int {
        var credit = 0
        while let first = self.uncredited.first, first.end <= taken {
            credit += first.count
            self.uncredited.removeFirst()
        }
        return credit
    }

    /// The data bytes handed over and not taken, which nobody will take now (the far end is gone).
    mutating func abandoned() -> Int {
        defer { self.uncredited.removeAll() }
        return self.uncredited.reduce(0) { $0 + $1.count }
    }

    /// `count` data bytes were just written into `pipe` (framing may surround them).
    mutating func written(_ count: Int, into pipe: StreamConnection) {
        self.written(count, endingAt: pipe.bytesSent + pipe.pendingWriteBytes)
    }

    /// The data bytes the far end took out of `pipe` since the last call.
    mutating func taken(from pipe: StreamConnection) -> Int {
        self.taken(upTo: pipe.bytesSent)
    }
}
