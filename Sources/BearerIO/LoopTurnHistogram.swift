/// How long an event loop's turns take: from `epoll_wait` returning to the loop waiting again.
///
/// A long turn delays every connection of the loop, so this is where a p99 that is worse than the
/// median comes from (a burst of writes, many timers, an accept storm). Counted per loop with plain
/// integers (confined to the loop) and summed when scraped.
package struct LoopTurnHistogram: Sendable {
    /// Upper bounds in nanoseconds: 50 µs … 100 ms.
    package static let bounds: [Int64] = [
        50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000,
        100_000_000,
    ]

    /// One more than `bounds`: the last counts turns longer than every bound.
    package private(set) var counts = [Int](repeating: 0, count: LoopTurnHistogram.bounds.count + 1)
    package private(set) var totalNanoseconds: Int64 = 0
    package private(set) var longest: Int64 = 0

    package init() {}

    package var count: Int { self.counts.reduce(0, +) }

    mutating func record(_ nanoseconds: Int64) {
        var index = 0
        while index < Self.bounds.count && nanoseconds > Self.bounds[index] { index += 1 }
        self.counts[index] += 1
        self.totalNanoseconds &+= nanoseconds
        if nanoseconds > self.longest { self.longest = nanoseconds }
    }

    package mutating func add(_ other: LoopTurnHistogram) {
        for index in self.counts.indices { self.counts[index] += other.counts[index] }
        self.totalNanoseconds &+= other.totalNanoseconds
        self.longest = max(self.longest, other.longest)
    }
}
