import Synchronization

/// A clock that moves only when told to, so time-dependent logic is tested without sleeping.
package final class ManualTimeSource: TimeSource {
    private let current: Locked<Instant>

    package init(start: Instant = Instant(nanoseconds: 1_000_000_000_000)) {
        self.current = Locked(start)
    }

    package func now() -> Instant {
        self.current.withLock { $0 }
    }

    package func advance(by duration: Duration) {
        self.current.withLock { $0 = $0 + duration }
    }
}
