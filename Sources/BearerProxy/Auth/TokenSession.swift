import BearerCore
import BearerIO
import Synchronization

/// A request waiting for a token: told on its own loop when the token (or a failure) is there.
protocol TokenWaiter: AnyObject {
    func tokenGranted(_ id: TokenSessionStateMachine.WaiterID, _ grant: TokenSession.Grant)
}

/// The proxy's token session: the state machine behind a lock, and the I/O its actions ask for.
///
/// The one shared mutable thing in the proxy. Every call locks, lets the state machine decide, unlocks,
/// and only then acts (starts a refresh, resumes waiters on their loops, logs): no I/O under the lock.
package final class TokenSession: Sendable {
    package typealias WaiterID = TokenSessionStateMachine.WaiterID

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
    }

    /// A parked request: which loop to wake and whom to tell there.
    struct WaiterHandle: @unchecked Sendable {
        let loop: EventLoop
        let waiter: TokenWaiter

        func resume(_ id: WaiterID, _ grant: Grant) {
            let handle = self
            self.loop.execute { handle.waiter.tokenGranted(id, grant) }
        }
    }

    struct State {
        var machine: TokenSessionStateMachine
        var waiters: [WaiterID: WaiterHandle] = [:]
        var nextWaiterID: WaiterID = 1
        var cachedLine: (generation: Int, bytes: [UInt8])?
        var refreshStartedAt: Instant?
        var refreshTrigger = ""
        /// The token the refresh in progress replaces, taken when it was decided: a token adopted
        /// between that decision and the store's refresh must not be replaced in its turn.
        var refreshReplacing: Secret<String>?
        var waiterTimerAt: Instant?
        var lastOutcome: (outcome: String, wallTime: Double)?
        var observers: [@Sendable (RefreshOutcome) -> Void] = []
        var metrics = SessionMetrics()
        /// What `freeEpoch` currently stands for (see `publishFreeToken`).
        var publishedFree: FreeToken?
        var lastEpoch = 0
        /// Counts ended refreshes: a retry timer set during one refresh must not restart a later one.
        var refreshEpoch = 0

        /// The refresh in progress is over (it ended, or a logout dropped it): its retry timer must
        /// find nothing to retry, and the token it was replacing is no longer needed.
        mutating func refreshIsOver() {
            self.refreshEpoch += 1
            self.refreshReplacing = nil
        }
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

    /// How a refresh ended, for whoever forced it.
    package enum RefreshOutcome: Sendable {
        case succeeded(generation: Int)
        case failed(SessionFailure)
    }

    let state: Locked<State>
    /// Names the token every request may carry without a decision (0: none, ask). Bumped, under the
    /// lock, whenever that changes: a loop's cache holding another epoch asks again. This is what keeps
    /// the lock off the data path while a token simply works.
    private let freeEpoch = Atomic<Int>(0)
    /// The newest generation the session heard was accepted: later acceptances of it need no lock.
    private let acceptedGeneration = Atomic<Int>(0)
    let source: TokenSource?
    package let store: RefreshTokenStore?
    /// The fleet's shared session (session_store), when there is one.
    package let sessionStore: SessionStore?
    let storeFallback: SessionStoreFallback
    let logger: Logger
    let clock: TimeSource
    let refreshSkew: Duration
    let refreshOn: [Int]
    private let timerLoop = Locked<EventLoop?>(nil)
    private let fileWatcher = Locked<RefreshTokenFileWatcher?>(nil)

    package init(
        configuration: Configuration,
        source: TokenSource?,
        store: RefreshTokenStore?,
        sessionStore: SessionStore? = nil,
        logger: Logger,
        clock: TimeSource = SystemTimeSource()
    ) {
        self.source = source
        self.store = store
        self.sessionStore = sessionStore
        self.storeFallback = configuration.sessionStore.fallback
        self.logger = logger
        self.clock = clock
        self.refreshSkew = configuration.refreshSkew
        self.refreshOn = configuration.refreshOn
        let settings = TokenSessionStateMachine.Settings(
            canRefresh: source != nil,
            canRetryWithoutNewCredentials: source?.canRetryWithoutNewCredentials ?? false,
            maximumSuspectRefreshes: configuration.maxRefreshes,
            refreshWindow: configuration.refreshWindow,
            refreshTimeout: configuration.refreshTimeout
        )
        let now = clock.now()
        let initial = configuration.accessToken.map {
            Self.makeToken($0, lifetime: nil, now: now, skew: configuration.refreshSkew)
        }
        self.state = Locked(State(machine: TokenSessionStateMachine(settings: settings, token: initial)))
    }

    /// A session with a fixed token (or none) and nothing to refresh with.
    package convenience init(accessToken: Secret<String>?) {
        var configuration = Configuration()
        configuration.accessToken = accessToken
        self.init(configuration: configuration, source: nil, store: nil, logger: .silent)
    }

    /// Starts timers on `loop`, and fetches a token at once when there is none but one can be had.
    package func start(timerLoop loop: EventLoop) {
        self.timerLoop.withLock { $0 = loop }
        // Before the first refresh: a token the fleet stored is adopted instead of fetching one.
        self.sessionStore?.start { stored in self.adoptStored(stored) }
        let now = self.clock.now()
        let (mustFetch, refreshAt) = self.mutate { state -> (Bool, Instant?) in
            let started = state.machine.started(now: now)
            if started { self.noteRefreshStart(&state, trigger: "startup", now: now) }
            return (started, state.machine.token?.refreshAt)
        }
        if mustFetch { self.runRefresh() }
        if let refreshAt { self.scheduleProactiveRefresh(at: refreshAt) }
        if self.store?.path != nil, let loop = self.timerLoop.withLock({ $0 }) {
            let watcher = RefreshTokenFileWatcher(loop: loop) { [weak self] in self?.lookAtRefreshTokenFile() }
            self.fileWatcher.withLock { $0 = watcher }
            watcher.start()
        }
    }

    /// The proxy stops: the refresh token file is no longer watched, and no timer is set from now on.
    package func stop() {
        self.timerLoop.withLock { $0 = nil }
        self.fileWatcher.withLock { $0 }?.stop()
    }

    /// Changes the state under the lock, then publishes whether a token is free to use (`freeEpoch`).
    func mutate<Result>(_ body: (inout State) -> Result) -> Result {
        self.state.withLock { state in
            let result = body(&state)
            self.publishFreeToken(&state)
            return result
        }
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
    func tokenForRequest(loop: EventLoop, waiter: TokenWaiter, cache: inout LoopTokenCache) -> RequestResult {
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

    /// The token for a request, decided by the state machine under the lock.
    func tokenForRequest(loop: EventLoop, waiter: TokenWaiter) -> RequestResult {
        let now = self.clock.now()
        let handle = WaiterHandle(loop: loop, waiter: waiter)
        var result = self.decide(now: now, handle: handle)
        if case .failed = result, let store = self.store, store.fileChanged(now: now) {
            // A fresh refresh token was dropped into the file: a new attempt may succeed.
            self.logger.info("refresh token file changed; retrying", ["file": store.path ?? ""])
            self.mutate { $0.machine.credentialsChanged() }
            result = self.decide(now: now, handle: handle)
        }
        return result
    }

    private func decide(now: Instant, handle: WaiterHandle) -> RequestResult {
        var startsRefresh = false
        var parkedID: WaiterID?
        let result = self.mutate { state -> RequestResult in
            let id = state.nextWaiterID
            let action = state.machine.requestNeedsToken(id, now: now)
            switch action {
            case .send(let token, let generation):
                return .ready(line: Self.line(&state, token, generation), generation: generation)
            case .sendAndStartRefresh(let token, let generation):
                startsRefresh = true
                self.noteRefreshStart(&state, trigger: "proactive", now: now)
                return .ready(line: Self.line(&state, token, generation), generation: generation)
            case .sendWithoutToken:
                return .noToken
            case .park, .parkAndStartRefresh:
                if case .parkAndStartRefresh = action {
                    startsRefresh = true
                    self.noteRefreshStart(
                        &state,
                        trigger: state.machine.token == nil ? "no token" : "expired",
                        now: now
                    )
                }
                state.nextWaiterID += 1
                state.waiters[id] = handle
                parkedID = id
                return .parked(id)
            case .fail(let failure):
                return .failed(failure)
            }
        }
        if startsRefresh { self.runRefresh() }
        if parkedID != nil { self.armWaiterTimer() }
        return result
    }

    /// The upstream answered a status in refresh_on to an injected request stamped with `generation`.
    func upstreamRejected(
        generation: Int,
        isReplay: Bool,
        isReplayable: Bool,
        loop: EventLoop,
        waiter: TokenWaiter
    ) -> RejectionResult {
        let now = self.clock.now()
        var startsRefresh = false
        var logStormGuard = false
        var warnOfRejection: Int?
        let handle = WaiterHandle(loop: loop, waiter: waiter)
        let result = self.mutate { state -> RejectionResult in
            let id = state.nextWaiterID
            let action = state.machine.upstreamRejected(
                id,
                generation: generation,
                isReplay: isReplay,
                isReplayable: isReplayable,
                now: now
            )
            switch action {
            case .replay(let token, let newGeneration):
                return .replay(line: Self.line(&state, token, newGeneration), generation: newGeneration)
            case .park, .parkAndStartRefresh:
                if action == .parkAndStartRefresh {
                    startsRefresh = true
                    self.noteRefreshStart(&state, trigger: "401", now: now)
                }
                state.nextWaiterID += 1
                state.waiters[id] = handle
                return .parked(id)
            case .forwardToClient:
                return .forwardToClient
            case .forwardToClientAndStartRefresh:
                startsRefresh = true
                self.noteRefreshStart(&state, trigger: "401", now: now)
                return .forwardToClient
            case .forwardToClientStormGuard(let isFirst):
                logStormGuard = isFirst
                return .forwardToClient
            case .forwardToClientUnrefreshable(let isFirst):
                if isFirst { warnOfRejection = generation }
                // The next acceptance of this token must reach the machine: it ends the refusal.
                self.acceptedGeneration.store(0, ordering: .relaxed)
                return .forwardToClient
            }
        }
        if let warnOfRejection {
            self.logger.warn(
                "the upstream refused the access token, and nothing can refresh it; its answers pass through to clients",
                [
                    "generation": "\(warnOfRejection)",
                    "refresh_on": self.refreshOn.map(String.init).joined(separator: ","),
                    "fix": Self.waysToNewTokens,
                ]
            )
        }
        if logStormGuard {
            self.logger.warn(
                "refresh storm guard: new tokens are rejected right after they are issued; passing 401s to clients",
                ["max_refreshes": "\(self.mutate { $0.machine.settings.maximumSuspectRefreshes })"]
            )
        }
        if startsRefresh { self.runRefresh() }
        if case .parked = result { self.armWaiterTimer() }
        return result
    }

    /// The upstream answered a status not in refresh_on to a request stamped with `generation`.
    func upstreamAccepted(generation: Int) {
        // Only the first acceptance of a token changes anything (the storm guard's "it worked").
        if self.acceptedGeneration.load(ordering: .relaxed) == generation { return }
        self.mutate { state in
            state.machine.upstreamAccepted(generation: generation)
            // Under the lock, ordered with a refusal's reset of it.
            self.acceptedGeneration.store(generation, ordering: .relaxed)
        }
    }

    /// A parked request's client went away.
    func cancel(_ id: WaiterID) {
        self.mutate { state in
            state.waiters[id] = nil
            state.machine.waiterCancelled(id)
        }
    }

    // MARK: Refreshing

    func noteRefreshStart(_ state: inout State, trigger: String, now: Instant) {
        state.refreshStartedAt = now
        state.refreshTrigger = trigger
        state.refreshReplacing = state.machine.token?.value
    }

    func runRefresh() {
        guard let source = self.source else { return }
        if let sessionStore = self.sessionStore {
            self.refreshThroughStore(sessionStore, source: source)
        } else {
            source.fetch { outcome in self.refreshFinished(outcome) }
        }
    }

    func refreshFinished(_ outcome: TokenFetchOutcome) {
        let now = self.clock.now()
        let result: TokenSessionStateMachine.RefreshResult
        switch outcome {
        case .token(let fetched):
            result = .success(
                Self.makeToken(fetched.accessToken, lifetime: fetched.expiresIn, now: now, skew: self.refreshSkew)
            )
        case .permanent(let failure):
            result = .permanent(failure)
        case .transient(let reason, let timedOut):
            result = .transient(reason: reason, timedOut: timedOut)
        case .rateLimited(let retryAfter):
            result = .rateLimited(retryAfter: retryAfter)
        }
        self.endRefresh(cause: Self.describe(outcome), now: now) { $0.refreshEnded(result, now: now) }
    }

    /// Ends the running refresh as `decide` says: resumes or fails the waiters, tells the observers,
    /// logs, and sets the next timer. `adoptedGeneration` is the store's generation of a token
    /// another proxy fetched (adopted, not refreshed here).
    func endRefresh(
        cause: String,
        adoptedGeneration: Int? = nil,
        now: Instant,
        _ decide: (inout TokenSessionStateMachine) -> TokenSessionStateMachine.RefreshEndAction
    ) {
        var expiresIn: Duration?
        var resumed: [(WaiterHandle, WaiterID)] = []
        var grant: Grant?
        var duration: Duration = .zero
        var trigger = ""
        var observers: [@Sendable (RefreshOutcome) -> Void] = []
        var outcomeForObservers: RefreshOutcome?
        let action = self.mutate { state -> TokenSessionStateMachine.RefreshEndAction in
            let action = decide(&state.machine)
            if case .resume = action { expiresIn = state.machine.token?.expiresAt.map { $0 - now } }
            duration = state.refreshStartedAt.map { now - $0 } ?? .zero
            trigger = state.refreshTrigger
            switch action {
            case .resume(let waiters, let token, let generation):
                grant = .token(line: Self.line(&state, token, generation), generation: generation)
                resumed = waiters.compactMap { id in state.waiters.removeValue(forKey: id).map { ($0, id) } }
                state.lastOutcome = (adoptedGeneration == nil ? "ok" : "adopted", wallClockSeconds())
                outcomeForObservers = .succeeded(generation: generation)
            case .fail(let waiters, let failure):
                grant = .failed(failure)
                resumed = waiters.compactMap { id in state.waiters.removeValue(forKey: id).map { ($0, id) } }
                state.lastOutcome = (failure.shortName, wallClockSeconds())
                outcomeForObservers = .failed(failure)
            case .keepCurrentToken(let failure):
                state.lastOutcome = (failure.shortName, wallClockSeconds())
                outcomeForObservers = .failed(failure)
            case .retry, .ignore:
                break
            }
            if outcomeForObservers != nil {
                observers = state.observers
                state.observers.removeAll()
                state.refreshIsOver()
            }
            Self.recordOutcome(
                action,
                isAdoption: adoptedGeneration != nil,
                duration: state.refreshStartedAt.map { now - $0 },
                into: &state.metrics
            )
            return action
        }
        let milliseconds = String(Int(duration.milliseconds))
        switch action {
        case .resume(let waiters, _, let generation):
            // waiting_requests: the requests that were held for this token (new ones, and ones that got
            // a 401 and are replayed), now sent with it.
            let expires = expiresIn.map { "\(Int($0.seconds))s" } ?? "unknown"
            if let adoptedGeneration {
                self.logger.info(
                    "token adopted from the session store",
                    [
                        "generation": "\(generation)", "store_generation": "\(adoptedGeneration)", "via": cause,
                        "expires_in": expires, "waiting_requests": "\(waiters.count)",
                    ]
                )
            } else {
                self.logger.info(
                    "token refreshed",
                    [
                        "generation": "\(generation)", "trigger": trigger, "duration_ms": milliseconds,
                        "expires_in": expires, "waiting_requests": "\(waiters.count)",
                    ]
                )
            }
            if let refreshAt = self.mutate({ $0.machine.token?.refreshAt }) {
                self.scheduleProactiveRefresh(at: refreshAt)
            }
        case .fail(let waiters, .noRefreshToken(.some, let reason)):
            // Nothing was asked of the token endpoint: this is about the file, and what fills it.
            self.logger.warn(
                "no refresh token yet; run 'bearer-proxy login'",
                ["reason": reason, "failed_requests": "\(waiters.count)"]
            )
        case .fail(let waiters, let failure):
            self.logger.warn(
                "token refresh failed",
                [
                    "error": failure.shortName, "status": "\(failure.status)", "reason": failure.message,
                    "failed_requests": "\(waiters.count)", "duration_ms": milliseconds,
                ]
            )
        case .keepCurrentToken(let failure):
            self.logger.warn(
                "proactive token refresh failed; the current token is kept until it expires or is rejected",
                ["error": failure.shortName, "reason": failure.message]
            )
            if let refreshAt = self.mutate({ $0.machine.token?.refreshAt }) {
                self.scheduleProactiveRefresh(at: refreshAt)
            }
        case .retry(let delay):
            self.logger.info(
                "token refresh will be retried",
                ["after_ms": "\(Int(delay.milliseconds))", "cause": cause]
            )
            let epoch = self.state.withLock { $0.refreshEpoch }
            self.onTimerLoop(after: delay) {
                // A token adopted from the session store, or a logout, ended this refresh meanwhile: no retry.
                if self.state.withLock({ $0.refreshEpoch == epoch }) {
                    self.runRefresh()
                } else {
                    self.logger.debug("token refresh retry dropped: the refresh ended meanwhile")
                }
            }
            self.armWaiterTimer()
        case .ignore:
            break
        }
        // After the log line: whoever reads the log sees the refresh before the requests it served.
        if let grant {
            for (handle, id) in resumed { handle.resume(id, grant) }
        }
        if let outcomeForObservers {
            for observer in observers { observer(outcomeForObservers) }
        }
    }

    private static func recordOutcome(
        _ action: TokenSessionStateMachine.RefreshEndAction,
        isAdoption: Bool,
        duration: Duration?,
        into metrics: inout SessionMetrics
    ) {
        let result: String
        switch action {
        case .resume: result = isAdoption ? "adopted" : "ok"
        case .fail(_, let failure): result = failure.shortName
        case .keepCurrentToken: result = "kept"
        case .retry, .ignore: return
        }
        metrics.refreshes[result, default: 0] += 1
        if let duration { metrics.refreshDuration.record(duration.seconds) }
    }

    static func describe(_ outcome: TokenFetchOutcome) -> String {
        switch outcome {
        case .token: "ok"
        case .permanent(let failure): failure.shortName
        case .transient(let reason, _): oneLine(reason)
        case .rateLimited(let retryAfter): "rate limited for \(Int(retryAfter.seconds))s"
        }
    }

    // MARK: Timers

    func scheduleProactiveRefresh(at instant: Instant) {
        let delay = instant - self.clock.now()
        self.onTimerLoop(after: max(delay, .zero)) {
            let now = self.clock.now()
            let due = self.mutate { state -> Bool in
                let due = state.machine.proactiveRefreshDue(now: now)
                if due { self.noteRefreshStart(&state, trigger: "proactive", now: now) }
                return due
            }
            if due { self.runRefresh() }
        }
    }

    /// One look of the `RefreshTokenFileWatcher`, on the blocking pool.
    private func lookAtRefreshTokenFile() {
        if let store = self.store, store.fileChanged(now: self.clock.now()) { self.refreshTokenFileChanged() }
    }

    /// A new refresh token file after a permanent failure: try again now. A deliberate logout stays.
    private func refreshTokenFileChanged() {
        let now = self.clock.now()
        let starts = self.mutate { state -> Bool in
            guard let failure = state.machine.failure, failure != .loggedOut else { return false }
            state.machine.credentialsChanged()
            let starts = state.machine.refreshRequested(now: now)
            if starts { self.noteRefreshStart(&state, trigger: "file", now: now) }
            return starts
        }
        guard starts else { return }
        self.logger.info("refresh token file changed; retrying", ["file": self.store?.path ?? ""])
        self.runRefresh()
    }

    /// Keeps one timer at the earliest time a parked request gives up.
    func armWaiterTimer() {
        let deadline = self.mutate { state -> Instant? in
            guard let next = state.machine.nextWaiterDeadline else { return nil }
            if let armed = state.waiterTimerAt, armed <= next { return nil }
            state.waiterTimerAt = next
            return next
        }
        guard let deadline else { return }
        self.onTimerLoop(after: max(deadline - self.clock.now(), .zero)) {
            let now = self.clock.now()
            let expired = self.mutate { state -> [(WaiterHandle, WaiterID, SessionFailure)] in
                state.waiterTimerAt = nil
                return state.machine.expireWaiters(now: now).compactMap { id, failure in
                    state.waiters.removeValue(forKey: id).map { ($0, id, failure) }
                }
            }
            for (handle, id, failure) in expired { handle.resume(id, .failed(failure)) }
            if !expired.isEmpty {
                self.logger.warn(
                    "parked requests gave up waiting for a token",
                    ["count": "\(expired.count)", "error": expired[0].2.shortName]
                )
            }
            self.armWaiterTimer()
        }
    }

    private func onTimerLoop(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        guard let loop = self.timerLoop.withLock({ $0 }) else { return }
        loop.execute {
            loop.schedule(after: delay) { action() }
        }
    }

    // MARK: Tokens

    /// A token with its expiry (from `expires_in`, else a JWT `exp`) and proactive refresh time:
    /// `refresh_skew` before expiry, at most half the lifetime, minus up to 10% jitter so that
    /// several proxies sharing a token do not all refresh at the same instant.
    static func makeToken(
        _ value: Secret<String>,
        lifetime: Duration?,
        now: Instant,
        skew: Duration
    ) -> TokenSessionStateMachine.Token {
        var lifetime = lifetime
        if lifetime == nil, let exp = JWTExpiry.expiry(of: value.reveal()) {
            lifetime = .milliseconds(Int64((exp - wallClockSeconds()) * 1000))
        }
        guard let lifetime else { return TokenSessionStateMachine.Token(value: value) }
        let expiresAt = now + lifetime
        let effectiveSkew = min(skew, lifetime / 2)
        let jitter = effectiveSkew * Double.random(in: 0..<0.1)
        return TokenSessionStateMachine.Token(
            value: value,
            expiresAt: expiresAt,
            refreshAt: expiresAt - effectiveSkew + jitter
        )
    }

    private static func line(_ state: inout State, _ token: Secret<String>, _ generation: Int) -> [UInt8] {
        if let cached = state.cachedLine, cached.generation == generation { return cached.bytes }
        let bytes = authorizationLine(token)
        state.cachedLine = (generation, bytes)
        return bytes
    }

    // MARK: Operator actions

    /// SIGHUP: re-read the refresh token file and refresh now (ends a permanent failure or a logout).
    package func reloadCredentials() {
        if let store = self.store, store.path != nil {
            do throws(RefreshTokenStore.StoreError) {
                try store.reload()
                self.logger.info("refresh token file re-read", ["file": store.path ?? ""])
            } catch {
                self.logger.error("cannot re-read the refresh token file", ["error": error.description])
            }
        }
        self.forceRefresh(trigger: "SIGHUP")
    }

    /// Starts a refresh now unless one runs; `observer` hears how it (or the running one) ended.
    /// Returns false when there is nothing to refresh with.
    @discardableResult
    package func forceRefresh(trigger: String, observer: (@Sendable (RefreshOutcome) -> Void)? = nil) -> Bool {
        let now = self.clock.now()
        let (canRefresh, starts) = self.mutate { state -> (Bool, Bool) in
            guard state.machine.settings.canRefresh else { return (false, false) }
            if state.machine.failure != nil { state.machine.credentialsChanged() }
            let starts = state.machine.refreshRequested(now: now)
            if starts { self.noteRefreshStart(&state, trigger: trigger, now: now) }
            if let observer { state.observers.append(observer) }
            return (true, starts)
        }
        if starts { self.runRefresh() }
        return canRefresh
    }

    /// Admin POST /logout: drop the tokens; waiting and later requests get 401 until a refresh is forced.
    /// Returns the refresh token that was in use (for revocation).
    package func logOut() -> Secret<String>? {
        let waiters = self.mutate { state -> [(WaiterHandle, WaiterID)] in
            let ids = state.machine.loggedOut()
            state.refreshIsOver()
            state.cachedLine = nil
            state.lastOutcome = ("logged_out", wallClockSeconds())
            return ids.compactMap { id in state.waiters.removeValue(forKey: id).map { ($0, id) } }
        }
        for (handle, id) in waiters { handle.resume(id, .failed(.loggedOut)) }
        self.logger.info("session logged out", ["failed_requests": "\(waiters.count)"])
        return self.store?.forget()
    }

    // MARK: Status

    /// What a person can do about a refused token nothing refreshes: the keys that give the proxy a way
    /// to new tokens (README, "Tokens: refresh on expiry, replay, never a 401 for the client").
    static let waysToNewTokens =
        "replace access_token, or let the proxy get new tokens: set token_url (with refresh_token_file, refresh_token, client_id and client_secret, or username and password) or token_command"

    /// `/status`'s `failure` while the upstream refuses the token and nothing can refresh it.
    private var rejectionText: String {
        let statuses = self.refreshOn.map(String.init)
        let answered = statuses.count == 1 ? statuses[0] : "one of " + statuses.joined(separator: ", ")
        return "the upstream answered \(answered) to the access token, and nothing can refresh it: "
            + Self.waysToNewTokens
    }

    package var generation: Int { self.state.withLock { $0.machine.generation } }
    var metrics: SessionMetrics { self.state.withLock { $0.metrics } }

    /// What `/status` shows: never a token.
    package struct Status: Sendable {
        package var state: String
        package var generation: Int
        package var expiresInSeconds: Double?
        package var lastRefreshOutcome: String?
        package var lastRefreshWallTime: Double?
        package var parked: Int
        package var failure: String?
    }

    package var status: Status {
        let now = self.clock.now()
        return self.mutate { state in
            let machine = state.machine
            let name: String
            switch machine.failure {
            case .loggedOut: name = "logged_out"
            case .some: name = "failed"
            case .none where machine.isRejectedWithoutRefresh: name = "rejected"
            case .none: name = machine.isRefreshing ? "refreshing" : (machine.token == nil ? "no_token" : "ready")
            }
            return Status(
                state: name,
                generation: machine.generation,
                expiresInSeconds: machine.token?.expiresAt.map { ($0 - now).seconds },
                lastRefreshOutcome: state.lastOutcome?.outcome,
                lastRefreshWallTime: state.lastOutcome?.wallTime,
                parked: machine.parkedCount,
                failure: machine.failure?.message ?? (machine.isRejectedWithoutRefresh ? self.rejectionText : nil)
            )
        }
    }
    package var parkedCount: Int { self.state.withLock { $0.machine.parkedCount } }
}

/// `Authorization: Bearer <token>\r\n`, ready to copy into a request head.
func authorizationLine(_ token: Secret<String>) -> [UInt8] {
    Array("Authorization: Bearer ".utf8) + Array(token.reveal().utf8) + [0x0D, 0x0A]
}
