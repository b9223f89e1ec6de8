import Dispatch

extension DispatchSemaphore {
    /// Waits for a signal until `deadline` on the monotonic clock; whether one came. A deadline already
    /// passed still takes a signal given earlier.
    package func wait(until deadline: Instant) -> Bool {
        let remaining = max(deadline - Instant.now(), .zero)
        return self.wait(timeout: .now() + .nanoseconds(Int(remaining.nanoseconds))) == .success
    }
}
