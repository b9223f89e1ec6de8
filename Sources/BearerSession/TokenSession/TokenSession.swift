import BearerConfig
import BearerCore
import BearerCrypto
import BearerIO
import Synchronization

/// A request waiting for a token: told on its own loop when the token (or a failure) is there.
package protocol TokenWaiter: AnyObject {
    func tokenGranted(_ id: TokenSession.WaiterID, _ grant: TokenSession.Grant)
}

/// The proxy's token session: the state machine behind a lock, and the I/O its actions ask for.
///
/// The one shared mutable thing in the proxy. Every call locks, feeds the machine one event,
/// unlocks, and only then performs what the machine answered (makes a token call, resumes waiters
/// on their loops, moves the timer, logs): no I/O under the lock, and nothing decided outside the
/// machine, which also holds everyone waiting. Besides the machine the class keeps only what the
/// lock-free data path reads (`freeEpoch`), the current token's `Authorization` line, and records
/// for `/status` and `/metrics`. Self-contained: its token source, stores, clock, timer scheduler
/// and pool for blocking work are given to it, so that a process can run several sessions side by
/// side.
package final class TokenSession: Sendable {
    package typealias WaiterID = UInt64
    typealias Machine = TokenSessionStateMachine<WaiterHandle, RefreshObserver>

    package enum Grant: Sendable {
        case token(line: [UInt8], generation: Int)
        case failed(SessionFailure)
    }

    package enum RequestResult {
        case ready(line: [UInt8], generation: Int)
        case noToken
        case parked(WaiterID)
        case failed(SessionFailure)
    }

    package enum RejectionResult {
        case replay(line: [UInt8], generation: Int)
        case parked(WaiterID)
        case forwardToClient
        /// The session cannot get a token now: the client gets this instead of the upstream's answer.
        case failed(SessionFailure)
    }

    /// How a refresh ended, for whoever forced it.
    package enum RefreshOutcome: Sendable {
        case succeeded(generation: Int)
        case failed(SessionFailure)
    }

    /// A parked request: which loop to wake and whom to tell there. Equal when it names the same.
    struct WaiterHandle: Equatable, @unchecked Sendable {
        let loop: any TimerScheduler
        let waiter: TokenWaiter

        static func == (lhs: WaiterHandle, rhs: WaiterHandle) -> Bool {
            lhs.loop === rhs.loop && lhs.waiter === rhs.waiter
        }

        func resume(_ id: WaiterID, _ grant: Grant) {
            let handle = self
            self.loop.execute { handle.waiter.tokenGranted(id, grant) }
        }
    }

    /// Whoever forced a refresh, waiting for its outcome. Equal only to itself.
    final class RefreshObserver: Equatable, Sendable {
        let tell: @Sendable (RefreshOutcome) -> Void

        init(_ tell: @escaping @Sendable (RefreshOutcome) -> Void) {
            self.tell = tell
        }

        static func == (lhs: RefreshObserver, rhs: RefreshObserver) -> Bool { lhs === rhs }
    }

    struct State {
        var machine: Machine
        /// Where tokens come from: replaced whole when SIGHUP re-reads the config (`reconfigure`).
        var supply: TokenSupply
        /// The `Authorization` line of the token last handed out: made once per generation.
        var line: (generation: Int, bytes: [UInt8])?
        var records = Records()
        /// What `freeEpoch` currently stands for (see `publishFreeToken`).
        var publishedFree: FreeToken?
        var lastEpoch = 0
    }

    /// A token requests may carry without taking the lock: which one, and until when.
    struct FreeToken: Equatable {
        var generation: Int
        var usableUntil: Instant?
    }

    /// Per event loop: the token last handed out there, reused without the session's lock while
    /// `freeEpoch` still names it. Confined to its loop (each loop keeps its own).
    package struct LoopTokenCache {
        var epoch = 0
        var line: [UInt8] = []
        var generation = 0
        var usableUntil: Instant?

        package init() {}
    }

    let state: Locked<State>
    /// Names the token every request may carry without a decision (0: none, ask). Bumped, under the
    /// lock, whenever that changes: a loop's cache holding another epoch asks again. This is what keeps
    /// the lock off the data path while a token simply works.
    private let freeEpoch = Atomic<Int>(0)
    /// The newest generation the session heard was accepted: later acceptances of it need no lock.
    /// Read by the connection's inlined `knowsAcceptance(of:)`, once per response.
    @usableFromInline let acceptedGeneration = Atomic<Int>(0)
    /// The fleet's shared session (session_store), when there is one.
    package let sessionStore: SessionStore?
    let storeFallback: SessionStoreFallback
    let logger: Logger
    let clock: TimeSource
    let refreshOn: [Int]
    let timer: SessionTimer
    /// Where writing and watching refresh_token_file run: those system calls may block.
    let blockingWork: BlockingWorkPool
    let fileWatcher = Locked<RefreshTokenFileWatcher?>(nil)
    /// dpop = on: a token answered with token_type DPoP is sent as `Authorization: DPoP`.
    let usesDPoP: Bool

    /// `timers` runs the session's timer (in the proxy, one of its event loops); `clock` is the
    /// clock its deadlines are read on.
    convenience init(
        settings: SessionSettings,
        process: ProcessSettings,
        source: TokenSource?,
        store: RefreshTokenStore?,
        revocation: TokenRevocation? = nil,
        sessionStore: SessionStore? = nil,
        logger: Logger,
        clock: TimeSource = SystemTimeSource(),
        timers: any TimerScheduler,
        blockingWork: BlockingWorkPool = .shared
    ) {
        self.init(
            settings: settings,
            process: process,
            supply: TokenSupply(settings: settings, source: source, store: store, revocation: revocation),
            sessionStore: sessionStore,
            logger: logger,
            clock: clock,
            timers: timers,
            blockingWork: blockingWork
        )
    }

    /// `settings` and `process` give what lasts as long as the process (refresh_on, DPoP;
    /// refresh_timeout, the fleet's fallback); `supply` what SIGHUP may replace.
    package init(
        settings sessionSettings: SessionSettings,
        process: ProcessSettings,
        supply: TokenSupply,
        sessionStore: SessionStore? = nil,
        logger: Logger,
        clock: TimeSource = SystemTimeSource(),
        timers: any TimerScheduler,
        blockingWork: BlockingWorkPool = .shared
    ) {
        self.sessionStore = sessionStore
        self.storeFallback = process.sessionStore.fallback
        self.logger = logger
        self.clock = clock
        self.refreshOn = sessionSettings.refreshOn
        self.timer = SessionTimer(scheduler: timers)
        self.blockingWork = blockingWork
        self.usesDPoP = sessionSettings.dpop.isEnabled
        let settings = Self.machineSettings(supply, refreshTimeout: process.refreshTimeout)
        let now = clock.now()
        let initial = supply.configuredToken.map {
            Self.makeToken($0, lifetime: nil, now: now, skew: supply.refreshSkew)
        }
        self.state = Locked(State(machine: Machine(settings: settings, token: initial), supply: supply))
    }

    /// The machine's settings for `supply`; `refreshTimeout` lasts as long as the process.
    static func machineSettings(_ supply: TokenSupply, refreshTimeout: Duration) -> Machine.Settings {
        Machine.Settings(
            canRefresh: supply.source != nil,
            canRetryWithoutNewCredentials: supply.source?.canRetryWithoutNewCredentials ?? false,
            maximumSuspectRefreshes: supply.maximumSuspectRefreshes,
            refreshWindow: supply.refreshWindow,
            refreshTimeout: refreshTimeout
        )
    }

    /// The token source in use (nil: nothing refreshes).
    package var source: TokenSource? { self.state.withLock { $0.supply.source } }
    /// The refresh token store in use.
    package var store: RefreshTokenStore? { self.state.withLock { $0.supply.store } }
    /// Where admin POST /logout revokes the refresh token.
    package var revocation: TokenRevocation? { self.state.withLock { $0.supply.revocation } }
    var refreshSkew: Duration { self.state.withLock { $0.supply.refreshSkew } }

    /// Starts the session: the fleet's store is read (a token stored there is adopted instead of
    /// fetching one), a token is fetched at once when there is none but one can be had, the timer
    /// is set for the configured token's proactive refresh, and refresh_token_file is watched.
    package func start() {
        self.sessionStore?.start { stored in self.adoptStored(stored) }
        let now = self.clock.now()
        if let fetch = self.modify({ $0.machine.started(now: now) }) { self.startFetch(fetch) }
        self.watchRefreshTokenFile()
    }

    /// The proxy stops: the refresh token file is no longer watched, and the timer is cancelled and
    /// set no more.
    package func stop() {
        self.timer.stop()
        self.fileWatcher.withLock { $0 }?.stop()
    }

    /// Every change goes through here: locks, lets `body` feed the machine one event (and keep the
    /// records that go with it), publishes whether a token is free to use and asks whether the
    /// timer must move, unlocks, and then moves the timer.
    @discardableResult
    func modify<Result>(_ body: (inout State) -> Result) -> Result {
        let (result, deadline) = self.state.withLock { state in
            let result = body(&state)
            self.publishFreeToken(&state)
            return (result, state.machine.deadlineToArm())
        }
        if let deadline { self.timer.arm(at: deadline) { [weak self] in self?.deadlinePassed() } }
        return result
    }

    /// Called under the lock after every change: when the freely usable token changed (or stopped
    /// being free), a new epoch is published, so that no loop goes on using a token it should not.
    private func publishFreeToken(_ state: inout State) {
        let free = state.machine.freelyUsableToken.map {
            FreeToken(generation: $0.generation, usableUntil: $0.usableUntil)
        }
        guard free != state.publishedFree else { return }
        state.publishedFree = free
        if free == nil {
            self.freeEpoch.store(0, ordering: .releasing)
        } else {
            state.lastEpoch += 1
            self.freeEpoch.store(state.lastEpoch, ordering: .releasing)
        }
    }

    // MARK: The request path

    /// The token for a request about to be sent to an injected host, or a ticket to wait for one.
    ///
    /// While a token simply works, this is one atomic load and a clock read: the loop's `cache`
    /// holds the token line, and the session's epoch says it still stands. Otherwise the state
    /// machine decides under the lock, and a token it hands out freely refills the cache.
    package func tokenForRequest(loop: EventLoop, waiter: TokenWaiter, cache: inout LoopTokenCache) -> RequestResult {
        let epoch = self.freeEpoch.load(ordering: .acquiring)
        if epoch != 0 && epoch == cache.epoch {
            if let until = cache.usableUntil {
                if self.clock.now() < until { return .ready(line: cache.line, generation: cache.generation) }
            } else {
                return .ready(line: cache.line, generation: cache.generation)
            }
        }
        let result = self.tokenForRequest(loop: loop, waiter: waiter)
        if case .ready(let line, let generation) = result {
            self.state.withLock { state in
                guard let free = state.publishedFree, free.generation == generation else { return }
                cache = LoopTokenCache()
                cache.epoch = state.lastEpoch
                cache.line = line
                cache.generation = generation
                cache.usableUntil = free.usableUntil
            }
        }
        return result
    }

    /// The token for a request, decided by the state machine under the lock. A parked request is told
    /// on `loop` (its event loop).
    func tokenForRequest(loop: any TimerScheduler, waiter: TokenWaiter) -> RequestResult {
        let now = self.clock.now()
        let handle = WaiterHandle(loop: loop, waiter: waiter)
        var result = self.decide(now: now, handle: handle)
        if case .failed = result, let store = self.store, store.fileChanged(now: now) {
            // A fresh refresh token was dropped into the file: a new attempt may succeed.
            self.logger.info("refresh token file changed; retrying", ["file": store.path ?? ""])
            self.modify { $0.machine.credentialsChanged() }
            result = self.decide(now: now, handle: handle)
        }
        return result
    }

    private func decide(now: Instant, handle: WaiterHandle) -> RequestResult {
        let (result, fetch) = self.modify { state -> (RequestResult, Machine.Fetch?) in
            switch state.machine.requestNeedsToken(handle, now: now) {
            case .send(let token, let generation):
                return (.ready(line: Self.line(&state, token, generation), generation: generation), nil)
            case .sendAndStartRefresh(let token, let generation, let fetch):
                return (.ready(line: Self.line(&state, token, generation), generation: generation), fetch)
            case .sendWithoutToken:
                return (.noToken, nil)
            case .park(let id):
                return (.parked(id), nil)
            case .parkAndStartRefresh(let id, let fetch):
                return (.parked(id), fetch)
            case .fail(let failure):
                return (.failed(failure), nil)
            }
        }
        if let fetch { self.startFetch(fetch) }
        return result
    }

    /// The upstream answered a status in refresh_on to an injected request stamped with `generation`.
    package func upstreamRejected(
        generation: Int,
        isReplay: Bool,
        isReplayable: Bool,
        loop: any TimerScheduler,
        waiter: TokenWaiter
    ) -> RejectionResult {
        let now = self.clock.now()
        let handle = WaiterHandle(loop: loop, waiter: waiter)
        let (result, action) = self.modify { state -> (RejectionResult, Machine.RejectionAction) in
            let action = state.machine.upstreamRejected(
                handle,
                generation: generation,
                isReplay: isReplay,
                isReplayable: isReplayable,
                now: now
            )
            switch action {
            case .replay(let token, let newGeneration):
                return (.replay(line: Self.line(&state, token, newGeneration), generation: newGeneration), action)
            case .park(let id), .parkAndStartRefresh(let id, _):
                return (.parked(id), action)
            case .fail(let failure):
                return (.failed(failure), action)
            case .forwardToClientUnrefreshable:
                // The next acceptance of this token must reach the machine: it ends the refusal.
                self.acceptedGeneration.store(0, ordering: .relaxed)
                return (.forwardToClient, action)
            case .forwardToClient, .forwardToClientAndStartRefresh, .forwardToClientStormGuard:
                return (.forwardToClient, action)
            }
        }
        switch action {
        case .parkAndStartRefresh(_, let fetch), .forwardToClientAndStartRefresh(let fetch):
            self.startFetch(fetch)
        case .forwardToClientUnrefreshable(isFirst: true):
            self.logger.warn(
                "the upstream refused the access token, and nothing can refresh it; its answers pass through to clients",
                [
                    "generation": "\(generation)",
                    "refresh_on": self.refreshOn.map(String.init).joined(separator: ","),
                    "fix": Self.waysToNewTokens,
                ]
            )
        case .forwardToClientStormGuard(isFirst: true):
            self.logger.warn(
                "refresh storm guard: new tokens are rejected right after they are issued; passing 401s to clients",
                ["max_refreshes": "\(self.state.withLock { $0.machine.settings.maximumSuspectRefreshes })"]
            )
        case .replay, .park, .fail, .forwardToClient, .forwardToClientStormGuard, .forwardToClientUnrefreshable:
            break
        }
        return result
    }

    /// Whether `upstreamAccepted(generation:)` has nothing left to do: only the first acceptance of
    /// a token changes anything (the storm guard's "it worked").
    @inlinable @inline(__always)
    package func knowsAcceptance(of generation: Int) -> Bool {
        self.acceptedGeneration.load(ordering: .relaxed) == generation
    }

    /// The upstream answered a status not in refresh_on to a request stamped with `generation`.
    package func upstreamAccepted(generation: Int) {
        if self.knowsAcceptance(of: generation) { return }
        self.modify { state in
            state.machine.upstreamAccepted(generation: generation)
            // Under the lock, ordered with a refusal's reset of it.
            self.acceptedGeneration.store(generation, ordering: .relaxed)
        }
    }

    /// A parked request's client went away.
    package func cancel(_ id: WaiterID) {
        self.modify { $0.machine.waiterCancelled(id) }
    }

    /// `Authorization: Bearer <token>\r\n` (`DPoP <token>` for a DPoP-bound token) for `generation`,
    /// made once per token.
    static func line(_ state: inout State, _ token: Secret<String>, _ generation: Int) -> [UInt8] {
        if let cached = state.line, cached.generation == generation { return cached.bytes }
        let isDPoPBound = state.machine.generation == generation && state.machine.token?.isDPoPBound == true
        let bytes = isDPoPBound ? dpopAuthorizationLine(token) : authorizationLine(token)
        state.line = (generation, bytes)
        return bytes
    }
}

/// `Authorization: Bearer <token>\r\n`, ready to copy into a request head.
func authorizationLine(_ token: Secret<String>) -> [UInt8] {
    Array("Authorization: Bearer ".utf8) + Array(token.reveal().utf8) + [0x0D, 0x0A]
}

/// `Authorization: DPoP <token>\r\n` (RFC 9449 §7.1): a DPoP-bound token's line. The data path adds
/// the proof that goes with it (`DPoPLine`).
func dpopAuthorizationLine(_ token: Secret<String>) -> [UInt8] {
    DPoPLine.authorizationPrefix + Array(token.reveal().utf8) + [0x0D, 0x0A]
}
