import BearerCore
import BearerIO

/// The session's time: one timer at the machine's next deadline, and the refresh token file's watcher.
extension TokenSession {
    /// The session's timer fired: the machine says what is due, and that is done.
    func deadlinePassed() {
        let now = self.clock.now()
        let action = self.modify { $0.machine.deadlinePassed(now: now) }
        if let gaveUp = action.gaveUp {
            for parked in gaveUp.waiters { parked.waiter.resume(parked.id, .fail(gaveUp.failure)) }
            self.logger.warn(
                "parked requests gave up waiting for a token",
                ["count": "\(gaveUp.waiters.count)", "error": gaveUp.failure.shortName]
            )
        }
        if let fetch = action.fetch { self.startFetch(fetch) }
    }

    /// With a refresh_token_file, looks at it while the session runs: a token written there (by
    /// `bearer-proxy login`, or by hand) ends a permanent failure without waiting for a request.
    func watchRefreshTokenFile() {
        guard self.store?.path != nil else { return }
        let watcher = RefreshTokenFileWatcher(
            scheduler: self.timer.scheduler,
            clock: self.clock,
            pool: self.blockingWork
        ) { [weak self] in self?.lookAtRefreshTokenFile() }
        self.fileWatcher.withLock { $0 = watcher }
        watcher.start()
    }

    /// One look of the `RefreshTokenFileWatcher`, on the blocking pool.
    private func lookAtRefreshTokenFile() {
        guard let store = self.store, store.fileChanged(now: self.clock.now()) else { return }
        let now = self.clock.now()
        guard let fetch = self.modify({ $0.machine.refreshTokenFileChanged(now: now) }) else { return }
        self.logger.info("refresh token file changed; retrying", ["file": store.path ?? ""])
        self.startFetch(fetch)
    }
}

/// The token session's one timer, kept at or before the machine's next deadline. The session is
/// used from every loop; its timer lives on the scheduler's thread, which `arm` and `stop` hop to.
/// Once stopped it arms no more. Confined to the scheduler's context but for `arm` and `stop`.
final class SessionTimer: @unchecked Sendable {
    let scheduler: any TimerScheduler
    private var timer = DeadlineTimer()
    private var isStopped = false

    init(scheduler: any TimerScheduler) {
        self.scheduler = scheduler
    }

    /// Makes sure `fire` runs no later than `deadline` (it may run earlier: see `DeadlineTimer`).
    func arm(at deadline: Instant, _ fire: @escaping @Sendable () -> Void) {
        self.scheduler.execute {
            guard !self.isStopped else { return }
            self.timer.arm(at: deadline, on: self.scheduler) {
                self.timer.fired()
                fire()
            }
        }
    }

    func stop() {
        self.scheduler.execute {
            self.isStopped = true
            self.timer.cancel(on: self.scheduler)
        }
    }
}
