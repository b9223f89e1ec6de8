import BearerCore

/// One timer kept at or before a deadline that moves: what a connection or a session arms after
/// every event, for the earliest moment its state machine must hear of time again.
///
/// A deadline moved earlier re-arms the timer. A deadline moved later keeps the armed timer: it
/// fires early, the owner's machine finds nothing due, and the owner arms again for the later one.
/// That is cheaper than moving the timer each time, and keep-alive traffic moves a deadline later
/// on every request. The owner's `fire` calls `fired()` first, so that the next `arm` schedules
/// anew. Confined to the scheduler's context, as the owner is.
///
/// Public and inlinable (as `Instant` is, for the same reason): a connection arms it after every
/// event, and the check that the armed timer serves must cost no call.
public struct DeadlineTimer {
    /// When the armed timer fires (nil: none is armed).
    public private(set) var deadline: Instant?
    @usableFromInline var timer: TimerID?

    public init() {}

    /// Whether the armed timer fires at or before `deadline`, so that `arm` would do nothing: an owner
    /// on the data path asks first, and fetches its scheduler only when it must arm.
    @inlinable
    public func serves(_ deadline: Instant) -> Bool {
        guard let armed = self.deadline else { return false }
        return armed <= deadline
    }

    /// Makes sure the timer fires no later than `deadline`.
    @inlinable
    public mutating func arm(at deadline: Instant, on scheduler: some TimerScheduler, _ fire: @escaping () -> Void) {
        if self.serves(deadline) { return }
        self.rearm(at: deadline, on: scheduler, fire)
    }

    @usableFromInline
    mutating func rearm(at deadline: Instant, on scheduler: some TimerScheduler, _ fire: @escaping () -> Void) {
        if let timer = self.timer { scheduler.cancel(timer) }
        self.deadline = deadline
        self.timer = scheduler.schedule(at: deadline, fire)
    }

    /// The timer fired: nothing is armed any more.
    public mutating func fired() {
        self.timer = nil
        self.deadline = nil
    }

    public mutating func cancel(on scheduler: some TimerScheduler) {
        if let timer = self.timer { scheduler.cancel(timer) }
        self.fired()
    }
}
