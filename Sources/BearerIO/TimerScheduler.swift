import BearerCore

/// Where a component's timers run: an event loop in the proxy, a `ManualTimerScheduler` in tests.
///
/// A component that keeps timers (the token session, the refresh token file's watcher) is given
/// one, so that its tests move time by hand instead of waiting for it. `execute` is safe from any
/// thread; `schedule` and `cancel` only in the scheduler's own context (the loop's thread, or a
/// task `execute` runs). Public only so that `DeadlineTimer` can be inlined.
public protocol TimerScheduler: AnyObject, Sendable {
    /// Runs `task` in the scheduler's context, soon.
    func execute(_ task: @escaping @Sendable () -> Void)

    /// Runs `action` once, in the scheduler's context, when its clock reaches `deadline`.
    @discardableResult
    func schedule(at deadline: Instant, _ action: @escaping () -> Void) -> TimerID

    /// Drops a timer that has not fired; a timer that fired already is ignored.
    func cancel(_ timer: TimerID)
}

extension EventLoop: TimerScheduler {}
