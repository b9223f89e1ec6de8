import BearerConfig
import BearerCore
import BearerCrypto
import BearerIO
import Synchronization

/// The proxy's token session: the state machine behind a lock, and the I/O its actions ask for.
///
/// The one shared mutable thing in the proxy. Every call locks, feeds the machine one event,
/// unlocks, and only then performs what the machine answered (makes a token call, resumes waiters
/// on their loops, moves the timer, logs): no I/O under the lock, and nothing decided outside the
/// machine, which also holds everyone waiting. Besides the machine the class keeps the atomic
/// through which the machine's free-token epoch reaches the loops without the lock (`SessionPort`),
/// the current token's `Authorization` line, and records for `/status` and `/metrics`.
/// Self-contained: its token source, stores, clock, timer scheduler and pool for blocking work are
/// given to it, so that a process can run several sessions side by side.
package final class TokenSession: Sendable {
    typealias Machine = TokenSessionStateMachine<WaiterHandle, RefreshObserver>

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

        /// Tells the waiter, on its loop, how its wait ended.
        func resume(_ id: Machine.WaiterID, _ answer: TokenAnswer) {
            let handle = self
            self.loop.execute { handle.waiter.tokenReady(Ticket(id), answer) }
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
    }

    let state: Locked<State>
    /// The machine's free-token epoch (`TokenSessionStateMachine.freeTokenEpoch`), published to the
    /// loops without the lock: this is what keeps the lock off the data path while a token simply
    /// works. Written under the lock, after the machine moved it.
    private let publishedEpoch = Atomic<Int>(0)
    /// The fleet's shared session (session_store), when there is one.
    package let sessionStore: SessionStore?
    let logger: Logger
    let clock: TimeSource
    let refreshOn: [Int]
    /// `refresh_on` as the config file writes it (`401,grpc-unauthenticated`), for the warning.
    let refreshOnDescription: String
    let timer: SessionTimer
    /// Where writing and watching refresh_token_file run: those system calls may block.
    let blockingWork: BlockingWorkPool
    let fileWatcher = Locked<RefreshTokenFileWatcher?>(nil)

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
        self.logger = logger
        self.clock = clock
        self.refreshOn = sessionSettings.refreshOn
        self.refreshOnDescription = sessionSettings.refreshOnDescription
        self.timer = SessionTimer(scheduler: timers)
        self.blockingWork = blockingWork
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

    /// The machine's free-token epoch, as the loops read it.
    var freeTokenEpoch: Int { self.publishedEpoch.load(ordering: .acquiring) }

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
    /// records that go with it), lets the machine say whether the free token changed and the timer
    /// must move, unlocks, and then moves the timer.
    @discardableResult
    func modify<Result>(_ body: (inout State) -> Result) -> Result {
        let (result, deadline) = self.state.withLock { state in
            let result = body(&state)
            if state.machine.publishFreeToken() {
                self.publishedEpoch.store(state.machine.freeTokenEpoch, ordering: .releasing)
            }
            return (result, state.machine.deadlineToArm())
        }
        if let deadline { self.timer.arm(at: deadline) { [weak self] in self?.deadlinePassed() } }
        return result
    }

    // MARK: The request path (through `SessionPort`)

    /// What a loop's port keeps of the free token, with the answer that handed it out.
    struct FreePublication {
        var epoch: Int
        var usableUntil: Instant?
    }

    /// The token for a request, decided by the state machine under the lock; a waiting request is
    /// told on `loop` (its event loop). When the answer is the free token, also its epoch, for the
    /// port to keep.
    func answerRequest(_ waiter: TokenWaiter, on loop: any TimerScheduler) -> (TokenAnswer, FreePublication?) {
        let now = self.clock.now()
        let handle = WaiterHandle(loop: loop, waiter: waiter)
        let (answer, fetch) = self.modify { state -> (TokenAnswer, Machine.Fetch?) in
            var fetch: Machine.Fetch?
            let answer: TokenAnswer
            switch state.machine.requestNeedsToken(handle, now: now) {
            case .send(let token, let generation):
                answer = .send(Self.token(&state, token, generation))
            case .sendAndStartRefresh(let token, let generation, let refresh):
                answer = .send(Self.token(&state, token, generation))
                fetch = refresh
            case .sendWithoutToken:
                answer = .send(nil)
            case .park(let id):
                answer = .wait(Ticket(id))
            case .parkAndStartRefresh(let id, let refresh):
                answer = .wait(Ticket(id))
                fetch = refresh
            case .fail(let failure):
                answer = .fail(failure)
            }
            return (answer, fetch)
        }
        if let fetch { self.startFetch(fetch) }
        // What the machine published after the event: the port may keep a token it hands out freely.
        let free = self.state.withLock { state -> FreePublication? in
            guard case .send(let token?) = answer, let published = state.machine.publishedFreeToken,
                published.generation == token.generation
            else { return nil }
            return FreePublication(epoch: state.machine.freeTokenEpoch, usableUntil: published.usableUntil)
        }
        return (answer, free)
    }

    /// The upstream answered a status in refresh_on to an injected request stamped with `generation`.
    func answerRejection(
        of generation: Int,
        canWait: Bool,
        _ waiter: TokenWaiter,
        on loop: any TimerScheduler
    ) -> TokenAnswer {
        let now = self.clock.now()
        let handle = WaiterHandle(loop: loop, waiter: waiter)
        let (answer, action) = self.modify { state -> (TokenAnswer, Machine.RejectionAction) in
            let action = state.machine.upstreamRejected(
                handle,
                generation: generation,
                canWait: canWait,
                now: now
            )
            switch action {
            case .replay(let token, let newGeneration):
                return (.send(Self.token(&state, token, newGeneration)), action)
            case .park(let id), .parkAndStartRefresh(let id, _):
                return (.wait(Ticket(id)), action)
            case .fail(let failure):
                return (.fail(failure), action)
            case .forwardToClient, .forwardToClientAndStartRefresh, .forwardToClientStormGuard,
                .forwardToClientUnrefreshable:
                return (.passThrough, action)
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
                    "refresh_on": self.refreshOnDescription,
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
        return answer
    }

    /// The upstream answered a status not in refresh_on to a request stamped with `generation`.
    func upstreamAccepted(generation: Int) {
        self.modify { $0.machine.upstreamAccepted(generation: generation) }
    }

    /// A waiting request's client went away.
    func cancel(_ ticket: Ticket) {
        self.modify { $0.machine.waiterCancelled(ticket.id) }
    }

    /// The token as requests carry it: its line made once per generation.
    static func token(_ state: inout State, _ token: Secret<String>, _ generation: Int) -> SessionToken {
        SessionToken(line: Self.line(&state, token, generation), generation: generation)
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
