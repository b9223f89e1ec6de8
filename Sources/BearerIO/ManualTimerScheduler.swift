import BearerCore
import Glibc

/// Timers on a clock that moves only when a test says so (Hummingbird's `MockClock`): the
/// component under test is given this as its `TimerScheduler` and its `TimeSource`, and the test
/// calls `advance(by:)` instead of sleeping.
///
/// `execute` runs its task at once, on the caller's thread, and timers fire inside `advance`, on the
/// test's thread: a test that drives a component from one thread sees everything happen in order.
/// What runs in the scheduler's context (tasks and fired timers) runs one at a time, as on a loop,
/// also when a component's work comes back from another thread (the blocking pool); a task may
/// execute another.
package final class ManualTimerScheduler: TimerScheduler, TimeSource, @unchecked Sendable {
    private let clock: ManualTimeSource
    private let timers = Locked(TimerHeap())
    /// Held while something runs in the scheduler's context; recursive, so that a task (or a fired
    /// timer) may execute another.
    private let context = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    package init(start: Instant = Instant(nanoseconds: 1_000_000_000_000)) {
        self.clock = ManualTimeSource(start: start)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        self.context.initialize(to: pthread_mutex_t())
        pthread_mutex_init(self.context, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(self.context)
        self.context.deallocate()
    }

    package func now() -> Instant { self.clock.now() }

    package func execute(_ task: @escaping @Sendable () -> Void) {
        self.inContext(task)
    }

    @discardableResult
    package func schedule(at deadline: Instant, _ action: @escaping () -> Void) -> TimerID {
        self.timers.withLock { $0.schedule(at: deadline, action) }
    }

    package func cancel(_ timer: TimerID) {
        self.timers.withLock { $0.cancel(timer) }
    }

    /// How many timers are armed.
    package var timerCount: Int {
        self.timers.withLock { $0.count }
    }

    /// When the next timer fires (nil: none is armed).
    package var nextDeadline: Instant? {
        self.timers.withLock { $0.nextDeadline() }
    }

    /// Moves the clock forward by `duration`, firing each timer due on the way with the clock at
    /// its deadline, earliest first (timers those set, if due by the end, too).
    package func advance(by duration: Duration) {
        let end = self.clock.now() + duration
        while let next = self.nextDeadline, next <= end {
            let now = self.clock.now()
            if next > now { self.clock.advance(by: next - now) }
            let due = self.timers.withLock { $0.popDue(now: next) }
            for action in due { self.inContext(action) }
        }
        let now = self.clock.now()
        if end > now { self.clock.advance(by: end - now) }
    }

    private func inContext(_ work: () -> Void) {
        pthread_mutex_lock(self.context)
        defer { pthread_mutex_unlock(self.context) }
        work()
    }
}
