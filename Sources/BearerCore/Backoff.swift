/// How long to wait before trying again after consecutive failures: doubling from `first` up to `limit`.
///
/// The token session's retries of a token call and the session store's reconnections both wait
/// this way: a service that comes back is found again within a fraction of a second, and one that
/// stays down costs one attempt every few seconds.
package struct Backoff: Equatable, Sendable {
    /// 100 ms after the first failure, doubling to at most 5 s.
    package static let standard = Backoff(first: .milliseconds(100), limit: .seconds(5))

    package var first: Duration
    package var limit: Duration

    package init(first: Duration, limit: Duration) {
        self.first = first
        self.limit = limit
    }

    /// The wait after `failures` consecutive failures (1: the first).
    package func delay(afterFailures failures: Int) -> Duration {
        // Shifting by at most 30 keeps the product in range; the limit caps it long before that.
        let doublings = min(max(failures - 1, 0), 30)
        return min(self.limit, self.first * (1 << doublings))
    }
}
