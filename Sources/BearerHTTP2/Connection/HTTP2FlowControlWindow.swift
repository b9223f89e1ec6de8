/// One flow-control window (RFC 9113 §5.2, §6.9): how many bytes of DATA may still be sent, or
/// received, on a stream or the connection.
///
/// The receiving side gives credit back in batches: what was consumed accumulates until it reaches
/// half the window it was opened to, then one WINDOW_UPDATE returns all of it (as nghttp2 does), so
/// a stream of small frames does not cost a WINDOW_UPDATE each, and a peer that does not read makes
/// no credit flow at all (backpressure).
struct HTTP2FlowControlWindow: Equatable, Sendable {
    /// Bytes that may still be sent (or received) now; may go negative after a SETTINGS change
    /// (§6.9.2).
    private(set) var size: Int
    /// The size the window is kept at on the receiving side, to decide when to give credit back.
    let target: Int
    /// Bytes consumed on the receiving side but not yet returned with WINDOW_UPDATE.
    private(set) var unacknowledged = 0

    init(size: Int) {
        self.size = size
        self.target = size
    }

    /// Takes `count` bytes out of the window; false when they do not fit (a flow-control error when
    /// receiving, a bug when sending).
    mutating func consume(_ count: Int) -> Bool {
        guard count <= self.size else { return false }
        self.size -= count
        return true
    }

    /// Adds a received WINDOW_UPDATE's increment, or a SETTINGS_INITIAL_WINDOW_SIZE change's delta;
    /// false when the window would pass 2^31-1 (§6.9.1).
    mutating func grow(by increment: Int) -> Bool {
        guard self.size + increment <= HTTP2.maxWindowSize else { return false }
        self.size += increment
        return true
    }

    /// Records bytes the receiver is done with; returns the increment to send in a WINDOW_UPDATE
    /// once enough accumulated, and opens the window by it.
    mutating func release(_ count: Int) -> Int? {
        self.unacknowledged += count
        guard self.unacknowledged >= max(self.target / 2, 1) else { return nil }
        let increment = self.unacknowledged
        self.unacknowledged = 0
        self.size += increment
        return increment
    }
}
