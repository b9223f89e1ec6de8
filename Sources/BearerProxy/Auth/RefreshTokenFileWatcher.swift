import BearerCore
import BearerIO
import Synchronization

/// Looks at refresh_token_file twice a second while the proxy runs, so that a token written by
/// `bearer-proxy login`, or dropped in by hand, is in memory for the next refresh and ends a permanent
/// failure at once, without waiting for a request to notice.
///
/// The timer is one event loop's; only the look itself (a `stat`, and the read of a changed file:
/// syscalls that may block) goes to the blocking pool, and the next tick is armed once it is back, so
/// there is never more than one look in flight. `stop()` cancels the timer: once the proxy stopped,
/// nothing more is posted to the pool, and a look already posted does not look. Confined to `loop`
/// (`start` and `stop` hop onto it), but for `isStopped`.
final class RefreshTokenFileWatcher: @unchecked Sendable {
    static let interval: Duration = .milliseconds(500)

    private let loop: EventLoop
    private let look: @Sendable () -> Void
    /// On `loop` only.
    private var timer: TimerID?
    /// Set at once by `stop()`, from any thread: a look posted before it neither looks nor arms the next.
    private let isStopped = Atomic<Bool>(false)

    /// `look` runs on the blocking pool, once per tick.
    init(loop: EventLoop, look: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.look = look
    }

    func start() {
        self.loop.execute { self.arm() }
    }

    func stop() {
        self.isStopped.store(true, ordering: .releasing)
        self.loop.execute {
            if let timer = self.timer { self.loop.cancel(timer) }
            self.timer = nil
        }
    }

    private func arm() {
        self.loop.assertInEventLoop()
        guard !self.isStopped.load(ordering: .acquiring) else { return }
        self.timer = self.loop.schedule(after: Self.interval) {
            self.timer = nil
            BlockingWorkPool.shared.execute {
                guard !self.isStopped.load(ordering: .acquiring) else { return }
                self.look()
                self.loop.execute { self.arm() }
            }
        }
    }
}
