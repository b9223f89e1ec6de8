import BearerCore
import BearerIO
import Synchronization

/// Looks at refresh_token_file twice a second while the proxy runs, so that a token written by
/// `bearer-proxy login`, or dropped in by hand, is in memory for the next refresh and ends a permanent
/// failure at once, without waiting for a request to notice.
///
/// The timer is the scheduler's (the session's: an event loop in the proxy); only the look itself (a
/// `stat`, and the read of a changed file: system calls that may block) goes to the blocking pool,
/// and the next tick is armed once it is back, so there is never more than one look in flight.
/// `stop()` cancels the timer: once the proxy stopped, nothing more is posted to the pool, and a look
/// already posted does not look. Confined to the scheduler's context (`start` and `stop` hop onto
/// it), but for `isStopped`.
final class RefreshTokenFileWatcher: @unchecked Sendable {
    static let interval: Duration = .milliseconds(500)

    private let scheduler: any TimerScheduler
    private let clock: TimeSource
    private let pool: BlockingWorkPool
    private let look: @Sendable () -> Void
    /// In the scheduler's context only.
    private var timer: TimerID?
    /// Set at once by `stop()`, from any thread: a look posted before it neither looks nor arms the next.
    private let stopped = Atomic<Bool>(false)

    /// Whether `stop()` was called: from then on nothing looks at the file. What a test of a stopped
    /// proxy asks, rather than wait to see no look happen.
    var isStopped: Bool { self.stopped.load(ordering: .acquiring) }

    /// `look` runs on `pool`, once per tick of `clock`.
    init(
        scheduler: any TimerScheduler,
        clock: TimeSource,
        pool: BlockingWorkPool,
        look: @escaping @Sendable () -> Void
    ) {
        self.scheduler = scheduler
        self.clock = clock
        self.pool = pool
        self.look = look
    }

    func start() {
        self.scheduler.execute { self.arm() }
    }

    func stop() {
        self.stopped.store(true, ordering: .releasing)
        self.scheduler.execute {
            if let timer = self.timer { self.scheduler.cancel(timer) }
            self.timer = nil
        }
    }

    private func arm() {
        guard !self.isStopped else { return }
        self.timer = self.scheduler.schedule(at: self.clock.now() + Self.interval) {
            self.timer = nil
            self.pool.execute {
                guard !self.isStopped else { return }
                self.look()
                self.scheduler.execute { self.arm() }
            }
        }
    }
}
