import BearerCore

/// The token session's logic: which token a request carries, when to refresh, who waits for it, and
/// when the session must next hear of time.
///
/// A value type with no I/O, no clock and no randomness of its own: events come in (a request needs
/// a token, an upstream rejected generation g, a token call ended, the deadline passed), actions go
/// out (send with this token, park, make this token call, resume or fail these waiters).
/// `TokenSession` holds it under a lock and performs the actions. Everything a refresh is (what
/// started it, the token it replaces, its token call, who waits for it, when it retries) lives in
/// its `Refresh`; the session's timer follows from the state (`nextDeadline`). Generic over who
/// waits, so that the proxy keeps its waiters here and nowhere else: `Waiter` is a parked request
/// (in the proxy: whom to tell, on which loop), `Observer` whoever forced a refresh and waits for
/// its outcome. Implements docs/token-sources.md's "Tokens: refresh on expiry, replay, never a 401 for the
/// client".
package struct TokenSessionStateMachine<Waiter: Equatable & Sendable, Observer: Equatable & Sendable>: Sendable {
    package typealias WaiterID = UInt64
    /// Names one token call: its end carries the id, so that the end of a call the session has moved
    /// past (a logout, a token adopted from the session store) is dropped here, not by a guard.
    package typealias AttemptID = UInt64

    package struct Token: Equatable, Sendable {
        package var value: Secret<String>
        /// When the token stops working (from expires_in or a JWT exp); nil when unknown.
        package var expiresAt: Instant?
        /// When a proactive refresh starts; nil when the expiry is unknown.
        package var refreshAt: Instant?
        /// `token_type` `DPoP`: sent as `Authorization: DPoP`, with a proof per request (RFC 9449 §7.1).
        package var isDPoPBound: Bool

        package init(
            value: Secret<String>,
            expiresAt: Instant? = nil,
            refreshAt: Instant? = nil,
            isDPoPBound: Bool = false
        ) {
            self.value = value
            self.expiresAt = expiresAt
            self.refreshAt = refreshAt
            self.isDPoPBound = isDPoPBound
        }

        func isExpired(at now: Instant) -> Bool {
            guard let expiresAt else { return false }
            return now >= expiresAt
        }
    }

    package struct Settings: Sendable {
        /// A token source is configured (token_url or token_command).
        package var canRefresh: Bool
        /// The grant can be repeated without a new refresh token (client_credentials, password, command):
        /// after a permanent failure a new attempt is made once the storm-guard window has passed.
        package var canRetryWithoutNewCredentials: Bool
        package var maximumSuspectRefreshes: Int
        package var refreshWindow: Duration
        package var refreshTimeout: Duration

        package init(
            canRefresh: Bool,
            canRetryWithoutNewCredentials: Bool,
            maximumSuspectRefreshes: Int = 5,
            refreshWindow: Duration = .seconds(30),
            refreshTimeout: Duration = .seconds(30)
        ) {
            self.canRefresh = canRefresh
            self.canRetryWithoutNewCredentials = canRetryWithoutNewCredentials
            self.maximumSuspectRefreshes = maximumSuspectRefreshes
            self.refreshWindow = refreshWindow
            self.refreshTimeout = refreshTimeout
        }
    }

    package enum RefreshKind: Equatable, Sendable {
        /// Ahead of a known expiry: the current token still works and keeps being sent.
        case proactive
        /// The current token was rejected, expired, or there is none: requests wait for the new one.
        case reactive
    }

    /// What started a refresh: its log line's `trigger` (docs/operations.md, "Logs").
    package enum Trigger: Equatable, Sendable {
        case startup
        case proactive
        case noToken
        case expired
        /// An upstream answered a status in refresh_on.
        case rejected
        /// A new refresh token in refresh_token_file ended a permanent failure.
        case refreshTokenFile
        /// An operator asked (SIGHUP, admin POST /refresh).
        case requested(String)

        package var name: String {
            switch self {
            case .startup: "startup"
            case .proactive: "proactive"
            case .noToken: "no token"
            case .expired: "expired"
            case .rejected: "401"
            case .refreshTokenFile: "file"
            case .requested(let name): name
            }
        }
    }

    /// A parked request, as actions name it.
    package struct Parked: Equatable, Sendable {
        package var id: WaiterID
        package var waiter: Waiter

        package init(id: WaiterID, waiter: Waiter) {
            self.id = id
            self.waiter = waiter
        }
    }

    /// A token call to make now.
    package struct Fetch: Equatable, Sendable {
        package var attempt: AttemptID
        /// The token the refresh replaces (nil: none), taken when the refresh was decided: through the
        /// session store, any other usable token serves, and one adopted meanwhile is not replaced.
        package var replacing: Secret<String>?

        package init(attempt: AttemptID, replacing: Secret<String>?) {
            self.attempt = attempt
            self.replacing = replacing
        }
    }

    struct Waiting: Equatable, Sendable {
        var parked: Parked
        var since: Instant
        /// It parked while the token source was known to be down (`tokenSourceDown`): the next failed
        /// call ends its wait, instead of the retries within refresh_timeout that ride out a blip.
        var joinedWhileDown = false
    }

    enum Phase: Equatable, Sendable {
        /// The token call `attempt` runs.
        case calling(AttemptID)
        /// The last call failed; the next starts then (a backoff, or the token endpoint's Retry-After).
        case waiting(until: Instant)
    }

    struct Refresh: Equatable, Sendable {
        var kind: RefreshKind
        var trigger: Trigger
        var replacing: Secret<String>?
        var startedAt: Instant
        var phase: Phase
        /// Failed calls so far, for the backoff.
        var failures = 0
        /// Oldest first: the first gives up first.
        var waiters: [Waiting] = []
        var observers: [Observer] = []
        /// The token endpoint asked to wait until then (429/503 Retry-After).
        var retryAfterUntil: Instant?
        /// What the last failed call said, for requests that give up before the next one ends.
        var lastFailure: SessionFailure?

        var ended: EndedRefresh {
            EndedRefresh(
                trigger: self.trigger,
                startedAt: self.startedAt,
                waiters: self.waiters.map(\.parked),
                observers: self.observers
            )
        }
    }

    enum State: Equatable, Sendable {
        /// No refresh running. Valid transitions: .refreshing, .loggedOut.
        case idle
        /// One refresh is calling the token source, or waiting to call again. Valid transitions: .idle,
        /// .failed, .loggedOut.
        case refreshing(Refresh)
        /// The token endpoint refused the grant; requests fail at once. Valid transitions: .idle
        /// (new credentials), .refreshing (retry after the window, a new refresh token file, a forced
        /// refresh), .loggedOut.
        case failed(SessionFailure, at: Instant)
        /// Tokens dropped on purpose. Valid transitions: .refreshing (forced refresh).
        case loggedOut
    }

    // MARK: State

    package private(set) var settings: Settings
    private(set) var state: State = .idle
    package private(set) var token: Token?
    /// How many tokens the session has put in use: the configured token is generation 1 (without one,
    /// the first fetched token is), and each new token adds one; nothing else changes it (a logout
    /// drops the token but is not one), so `/status` and an API numbering its tokens agree. Requests
    /// are stamped with it.
    package private(set) var generation: Int
    /// The current token got at least one upstream answer whose status is not in refresh_on.
    private(set) var currentTokenServedTraffic = false
    private var suspectRefreshTimes: [Instant] = []
    private var stormGuardLoggedAt: Instant?
    /// Without a token source: the generation the upstream refused last (0: none, or accepted since).
    private var rejectedGeneration = 0
    /// The generation last warned of: a refused token nothing can refresh is warned of once.
    private var warnedRejectedGeneration = 0
    private var nextWaiterID: WaiterID = 1
    private var lastAttempt: AttemptID = 0
    /// The deadline the session's timer was last asked for and has not fired for (`deadlineToArm`).
    private var armedDeadline: Instant?
    /// Why the last token call failed without an answer (connection refused or reset, a timeout, a
    /// 5xx): the token source is down until a call gets an answer. Meanwhile a request that needs a
    /// token fails at once rather than wait out refresh_timeout for a source that is not there,
    /// unless a call is in flight (docs/token-sources.md, "Tokens: refresh on expiry, replay, never a 401 for the
    /// client").
    package private(set) var tokenSourceDown: SessionFailure?

    package init(settings: Settings, token: Token?) {
        self.settings = settings
        self.token = token
        self.generation = token == nil ? 0 : 1
    }

    /// The token a request gets without asking, and until when: while no refresh runs and nothing
    /// failed, every request gets the current token until its proactive refresh time (else its
    /// expiry); without a way to refresh, for as long as it stands. Nil otherwise: ask.
    package var freelyUsableToken: (value: Secret<String>, generation: Int, usableUntil: Instant?)? {
        guard case .idle = self.state, let token = self.token else { return nil }
        let until = self.settings.canRefresh ? (token.refreshAt ?? token.expiresAt) : nil
        return (token.value, self.generation, until)
    }

    /// The free token as last published (`publishFreeToken`), and the epoch that names it.
    package struct FreeToken: Equatable, Sendable {
        package var generation: Int
        package var usableUntil: Instant?
    }

    /// Names what every request may carry without a decision: 0 while that is nothing (ask), a new
    /// number each time it changes. Each loop keeps the token of an epoch and uses it without a lock
    /// while the epoch stands (`SessionPort`); a new epoch sends every loop back to ask once, and
    /// report once more that the token works.
    package private(set) var freeTokenEpoch = 0
    package private(set) var publishedFreeToken: FreeToken?
    private var lastFreeTokenEpoch = 0
    /// The upstream refused the token nothing can refresh: the next acceptance must reach the machine
    /// (it ends the refusal), so the token is published anew with a new epoch.
    private var republishesFreeToken = false

    /// After every event: whether the free token changed, and if so its new epoch. Returns whether it
    /// did (the epoch to publish to the loops).
    package mutating func publishFreeToken() -> Bool {
        let free = self.freelyUsableToken.map { FreeToken(generation: $0.generation, usableUntil: $0.usableUntil) }
        guard free != self.publishedFreeToken || (self.republishesFreeToken && free != nil) else { return false }
        self.republishesFreeToken = false
        self.publishedFreeToken = free
        if free == nil {
            self.freeTokenEpoch = 0
        } else {
            self.lastFreeTokenEpoch += 1
            self.freeTokenEpoch = self.lastFreeTokenEpoch
        }
        return true
    }

    /// The upstream refused the current token, and nothing can refresh it (`/status` shows it).
    package var isRejectedWithoutRefresh: Bool {
        !self.settings.canRefresh && self.generation > 0 && self.rejectedGeneration == self.generation
    }

    package var isRefreshing: Bool {
        if case .refreshing = self.state { return true }
        return false
    }

    /// The storm guard holds at `now`: the next refusal of the current token is passed to the client
    /// instead of starting a refresh, until the window moves past the last suspect refreshes.
    package func isHoldingStormGuard(at now: Instant) -> Bool {
        guard case .idle = self.state, !self.currentTokenServedTraffic else { return false }
        let recent = self.suspectRefreshTimes.filter { now - $0 < self.settings.refreshWindow }
        return recent.count >= self.settings.maximumSuspectRefreshes
    }

    package var parkedCount: Int {
        if case .refreshing(let refresh) = self.state { return refresh.waiters.count }
        return 0
    }

    package var failure: SessionFailure? {
        switch self.state {
        case .failed(let failure, _): failure
        case .loggedOut: .loggedOut
        case .idle, .refreshing: nil
        }
    }

    /// Why the last token call failed, while the token source is down and requests have no working
    /// token to go on with (during a proactive refresh they still have one): `/status`'s `failure`.
    package var unreachableFailure: SessionFailure? {
        guard let down = self.tokenSourceDown else { return nil }
        switch self.state {
        case .refreshing(let refresh): return refresh.kind == .proactive ? nil : down
        case .idle: return down
        case .failed, .loggedOut: return nil
        }
    }

    // MARK: Events

    /// At start: a session that can fetch a token but has none starts fetching it at once.
    package mutating func started(now: Instant) -> Fetch? {
        guard self.settings.canRefresh, self.token == nil, self.state == .idle else { return nil }
        return self.startRefresh(.reactive, trigger: .startup, now: now)
    }

    /// A request to an injected host is about to be sent.
    package mutating func requestNeedsToken(_ waiter: Waiter, now: Instant) -> RequestAction {
        switch self.state {
        case .loggedOut:
            return .fail(.loggedOut)
        case .failed(let failure, let failedAt):
            if self.settings.canRetryWithoutNewCredentials && now - failedAt >= self.settings.refreshWindow {
                return self.parkAndStartReactiveRefresh(waiter, now: now)
            }
            return .fail(failure)
        case .refreshing:
            if self.refreshKind == .proactive, let token = self.token, !token.isExpired(at: now) {
                return .send(token: token.value, generation: self.generation)
            }
            if let down = self.downWithNoCallInFlight { return .fail(down) }
            return .park(self.park(waiter, now: now))
        case .idle:
            guard let token = self.token else {
                guard self.settings.canRefresh else { return .sendWithoutToken }
                return self.parkAndStartReactiveRefresh(waiter, now: now)
            }
            guard self.settings.canRefresh else { return .send(token: token.value, generation: self.generation) }
            if token.isExpired(at: now) {
                // Expiry passed without the timer noticing (a laptop that slept): never send a dead token.
                return self.parkAndStartReactiveRefresh(waiter, now: now)
            }
            if let refreshAt = token.refreshAt, now >= refreshAt {
                let fetch = self.startRefresh(.proactive, trigger: .proactive, now: now)
                return .sendAndStartRefresh(token: token.value, generation: self.generation, fetch)
            }
            return .send(token: token.value, generation: self.generation)
        }
    }

    /// A request waits for a token that is missing, expired or refused: why, for the log line.
    private mutating func parkAndStartReactiveRefresh(_ waiter: Waiter, now: Instant) -> RequestAction {
        let fetch = self.startRefresh(.reactive, trigger: self.token == nil ? .noToken : .expired, now: now)
        return .parkAndStartRefresh(self.park(waiter, now: now), fetch)
    }

    /// The upstream answered a status in refresh_on to a request stamped with `generation` (a
    /// request's first send: a replay's refusal goes to its client, the exchange's rule).
    package mutating func upstreamRejected(
        _ waiter: Waiter,
        generation: Int,
        canWait: Bool,
        now: Instant
    ) -> RejectionAction {
        guard self.settings.canRefresh else { return self.rejectedWithoutRefresh(generation: generation) }
        switch self.state {
        case .loggedOut:
            return .fail(.loggedOut)
        case .failed(let failure, let failedAt):
            // The session failed for good since this request was sent: its client hears the same
            // sentence as the requests that waited for the refresh, not the upstream's bare 401.
            guard self.settings.canRetryWithoutNewCredentials && now - failedAt >= self.settings.refreshWindow else {
                return .fail(failure)
            }
            let fetch = self.startRefresh(.reactive, trigger: .rejected, now: now)
            guard canWait else { return .forwardToClientAndStartRefresh(fetch) }
            return .parkAndStartRefresh(self.park(waiter, now: now), fetch)
        case .refreshing:
            if generation < self.generation && self.refreshKind == .proactive, let token = self.token,
                !token.isExpired(at: now)
            {
                return canWait ? .replay(token: token.value, generation: self.generation) : .forwardToClient
            }
            // The token being replaced turned out dead already: stop sending it.
            if generation == self.generation { self.modifyRefresh { $0.kind = .reactive } }
            guard canWait else { return .forwardToClient }
            if let down = self.downWithNoCallInFlight { return .fail(down) }
            return .park(self.park(waiter, now: now))
        case .idle:
            if generation < self.generation {
                guard let token = self.token, canWait else { return .forwardToClient }
                return .replay(token: token.value, generation: self.generation)
            }
            if !self.currentTokenServedTraffic {
                // The token never worked: refreshing may not help (wrong scope, clock skew, an upstream
                // that rejects everything). Allow only a few such refreshes per window.
                self.suspectRefreshTimes.removeAll { now - $0 >= self.settings.refreshWindow }
                if self.suspectRefreshTimes.count >= self.settings.maximumSuspectRefreshes {
                    let isFirst = self.stormGuardLoggedAt.map { now - $0 >= self.settings.refreshWindow } ?? true
                    if isFirst { self.stormGuardLoggedAt = now }
                    return .forwardToClientStormGuard(isFirst: isFirst)
                }
                self.suspectRefreshTimes.append(now)
            }
            let fetch = self.startRefresh(.reactive, trigger: .rejected, now: now)
            guard canWait else { return .forwardToClientAndStartRefresh(fetch) }
            return .parkAndStartRefresh(self.park(waiter, now: now), fetch)
        }
    }

    /// Without a token source a refused token stays refused: noted for `/status`, warned of once per token.
    private mutating func rejectedWithoutRefresh(generation: Int) -> RejectionAction {
        // An older token than the current one (the session store brought a new one since) says nothing.
        guard generation == self.generation else { return .forwardToClient }
        let isFirst = self.warnedRejectedGeneration != generation
        self.republishesFreeToken = true
        self.rejectedGeneration = generation
        self.warnedRejectedGeneration = generation
        return .forwardToClientUnrefreshable(isFirst: isFirst)
    }

    /// The upstream answered a status not in refresh_on to a request stamped with `generation`.
    package mutating func upstreamAccepted(generation: Int) {
        guard generation == self.generation else { return }
        self.currentTokenServedTraffic = true
        // The refusal was for one path, or fixed upstream: the token works again.
        if self.rejectedGeneration == generation { self.rejectedGeneration = 0 }
    }

    /// The token call `attempt` ended. The end of a call the session moved past is ignored.
    package mutating func refreshEnded(
        _ attempt: AttemptID,
        _ result: RefreshResult,
        now: Instant
    ) -> RefreshEndAction {
        guard case .refreshing(var refresh) = self.state, refresh.phase == .calling(attempt) else { return .ignore }
        let wasDown = self.tokenSourceDown != nil
        switch result {
        case .transient(let reason, let timedOut):
            self.tokenSourceDown = timedOut ? .timedOut(reason: reason) : .unreachable(reason: reason)
        case .success, .permanent, .rateLimited:
            // The source answered: it is up, whatever it said.
            self.tokenSourceDown = nil
        }
        switch result {
        case .success(let token):
            return self.putInUse(token, ending: refresh)

        case .permanent(let failure):
            if let action = self.keepTokenAfterFailedProactiveRefresh(refresh, failure, now: now) { return action }
            self.token = nil
            self.state = .failed(failure, at: now)
            return .fail(failure, ended: refresh.ended)

        case .transient(let reason, let timedOut):
            refresh.failures += 1
            let delay = Backoff.standard.delay(afterFailures: refresh.failures)
            let failure: SessionFailure = timedOut ? .timedOut(reason: reason) : .unreachable(reason: reason)
            if now - refresh.startedAt + delay < self.settings.refreshTimeout {
                refresh.lastFailure = failure
                refresh.phase = .waiting(until: now + delay)
                // Who parked knowing the source was down waited for this call only.
                let knewItWasDown = refresh.waiters.filter(\.joinedWhileDown).map(\.parked)
                refresh.waiters.removeAll(where: \.joinedWhileDown)
                self.state = .refreshing(refresh)
                return .retry(
                    after: delay,
                    becameUnreachable: !wasDown,
                    gaveUp: knewItWasDown.isEmpty ? nil : GaveUp(waiters: knewItWasDown, failure: failure)
                )
            }
            if let action = self.keepTokenAfterFailedProactiveRefresh(refresh, failure, now: now) { return action }
            self.state = .idle
            return .fail(failure, ended: refresh.ended)

        case .rateLimited(let retryAfter):
            refresh.failures += 1
            refresh.retryAfterUntil = now + retryAfter
            refresh.phase = .waiting(until: now + retryAfter)
            self.state = .refreshing(refresh)
            return .retry(after: retryAfter, becameUnreachable: false, gaveUp: nil)
        }
    }

    /// Another proxy's token arrived through the session store: it becomes the current token, and a
    /// running refresh ends with it (its waiters are sent with it). A deliberate logout stays, and
    /// the token already in use changes nothing (a publication and a refresh may both bring it).
    package mutating func tokenAdopted(_ token: Token) -> RefreshEndAction {
        guard token.value != self.token?.value else { return .ignore }
        switch self.state {
        case .loggedOut:
            return .ignore
        case .refreshing(let refresh):
            return self.putInUse(token, ending: refresh)
        case .idle, .failed:
            return self.putInUse(token, ending: nil)
        }
    }

    private mutating func putInUse(_ token: Token, ending refresh: Refresh?) -> RefreshEndAction {
        self.generation += 1
        self.token = token
        self.currentTokenServedTraffic = false
        self.state = .idle
        return .resume(token, generation: self.generation, ended: refresh?.ended)
    }

    /// After a failed proactive refresh the current token is kept while it works, with the next
    /// attempt pushed back (spreading the storm guard's allowance over the window); nil when it
    /// does not work any more.
    private mutating func keepTokenAfterFailedProactiveRefresh(
        _ refresh: Refresh,
        _ failure: SessionFailure,
        now: Instant
    ) -> RefreshEndAction? {
        guard refresh.kind == .proactive, var token = self.token, !token.isExpired(at: now) else { return nil }
        let retry = now + self.settings.refreshWindow / max(1, self.settings.maximumSuspectRefreshes)
        token.refreshAt = token.expiresAt.map { min($0, retry) } ?? retry
        self.token = token
        self.state = .idle
        return .keepCurrentToken(failure, ended: refresh.ended)
    }

    // MARK: Time

    /// When the session must next hear of time: the proactive refresh, the first parked request
    /// giving up, or the next token call after a failed one.
    package var nextDeadline: Instant? {
        switch self.state {
        case .idle:
            return self.settings.canRefresh ? self.token?.refreshAt : nil
        case .refreshing(let refresh):
            // Waiters are appended as they park, so the first one parked earliest.
            let waiterDeadline = refresh.waiters.first.map { $0.since + self.settings.refreshTimeout }
            guard case .waiting(let until) = refresh.phase else { return waiterDeadline }
            return waiterDeadline.map { min($0, until) } ?? until
        case .failed, .loggedOut:
            return nil
        }
    }

    /// The deadline the session's timer must be armed for after an event: the next deadline when it
    /// is earlier than the one asked for last, nil when the armed timer serves (it fires early at
    /// worst: `deadlinePassed` finds nothing due, and the next event asks again). Lets a session used
    /// from many threads hop to its timer's thread only when the timer must move.
    package mutating func deadlineToArm() -> Instant? {
        guard let next = self.nextDeadline else { return nil }
        if let armed = self.armedDeadline, armed <= next { return nil }
        self.armedDeadline = next
        return next
    }

    /// The session's timer fired: whatever is due happens (the proactive refresh starts, parked
    /// requests that waited refresh_timeout give up, the next token call starts).
    package mutating func deadlinePassed(now: Instant) -> DeadlineAction {
        self.armedDeadline = nil
        switch self.state {
        case .idle:
            guard self.settings.canRefresh, let token = self.token, let refreshAt = token.refreshAt, now >= refreshAt
            else { return DeadlineAction() }
            let kind: RefreshKind = token.isExpired(at: now) ? .reactive : .proactive
            return DeadlineAction(fetch: self.startRefresh(kind, trigger: .proactive, now: now))
        case .refreshing:
            let timeout = self.settings.refreshTimeout
            let attempt = self.lastAttempt + 1
            let action = self.modifyRefresh { refresh -> DeadlineAction in
                var action = DeadlineAction(gaveUp: Self.expire(&refresh, now: now, timeout: timeout))
                if case .waiting(let until) = refresh.phase, until <= now {
                    refresh.phase = .calling(attempt)
                    action.fetch = Fetch(attempt: attempt, replacing: refresh.replacing)
                }
                return action
            }
            if action?.fetch != nil { self.lastAttempt = attempt }
            return action ?? DeadlineAction()
        case .failed, .loggedOut:
            return DeadlineAction()
        }
    }

    /// Removes the waiters that waited `timeout`; they are told the last failure, or that the token
    /// endpoint asked to wait beyond it.
    private static func expire(_ refresh: inout Refresh, now: Instant, timeout: Duration) -> GaveUp? {
        let count = refresh.waiters.prefix { now - $0.since >= timeout }.count
        guard count > 0 else { return nil }
        let failure: SessionFailure
        if let until = refresh.retryAfterUntil, until > now {
            let seconds = Int(((until - now).nanoseconds + 999_999_999) / 1_000_000_000)
            failure = .rateLimited(retryAfterSeconds: seconds)
        } else {
            failure = refresh.lastFailure ?? .timedOut(reason: "no new token within refresh_timeout")
        }
        let gaveUp = GaveUp(waiters: refresh.waiters.prefix(count).map(\.parked), failure: failure)
        refresh.waiters.removeFirst(count)
        return gaveUp
    }

    // MARK: Requests and operators

    /// A parked request's client went away.
    package mutating func waiterCancelled(_ id: WaiterID) {
        self.modifyRefresh { refresh in
            if let index = refresh.waiters.firstIndex(where: { $0.parked.id == id }) {
                refresh.waiters.remove(at: index)
            }
        }
    }

    /// There is reason to believe a new attempt can succeed (a new refresh token in the file):
    /// leave a permanent failure, and let the next request fetch a token.
    package mutating func credentialsChanged() {
        if case .failed = self.state { self.state = .idle }
    }

    /// A new refresh token in refresh_token_file, noticed while nothing asks: a refresh that failed
    /// for good starts again. A logout stays.
    package mutating func refreshTokenFileChanged(now: Instant) -> Fetch? {
        guard case .failed = self.state else { return nil }
        return self.startRefresh(self.token == nil ? .reactive : .proactive, trigger: .refreshTokenFile, now: now)
    }

    /// An operator forces a refresh (SIGHUP, admin POST /refresh): one starts unless one runs, and
    /// `observer` hears how it ends. It ends a permanent failure and a logout. `parks` (admin
    /// `POST /refresh?park=1`): the current token is treated as dead, as after a 401, so every request
    /// that needs one waits for the new token instead of going on with the old (a running proactive
    /// refresh turns so too): an expiry storm on demand, without the upstream refusing anything.
    package mutating func refreshRequested(
        by trigger: String,
        parks: Bool = false,
        observer: Observer? = nil,
        now: Instant
    ) -> RequestedRefreshAction {
        guard self.settings.canRefresh else { return .unavailable }
        var action = RequestedRefreshAction.join
        if !self.isRefreshing {
            let kind: RefreshKind = self.token == nil || parks ? .reactive : .proactive
            action = .start(self.startRefresh(kind, trigger: .requested(trigger), now: now))
        } else if parks {
            self.modifyRefresh { $0.kind = .reactive }
        }
        if let observer { self.modifyRefresh { $0.observers.append(observer) } }
        return action
    }

    /// SIGHUP re-read the config: `settings` follow its token source (added, changed or removed) and
    /// storm guard, and `configuredToken` is its access_token when that changed, put in use at once (a
    /// static token rotated by editing the config). A logout or a failure for good ends with a new
    /// token; without a way to refresh, a failure ends too (nothing is left to fail).
    package mutating func reconfigured(_ settings: Settings, configuredToken: Token?) -> RefreshEndAction {
        self.settings = settings
        guard let token = configuredToken else {
            if !settings.canRefresh, case .failed = self.state { self.state = .idle }
            return .ignore
        }
        if case .refreshing(let refresh) = self.state { return self.putInUse(token, ending: refresh) }
        return self.putInUse(token, ending: nil)
    }

    /// Drops the tokens on purpose (admin POST /logout): the running refresh ends, and whoever waited
    /// for it fails.
    package mutating func loggedOut() -> EndedRefresh? {
        var ended: EndedRefresh?
        if case .refreshing(let refresh) = self.state { ended = refresh.ended }
        self.token = nil
        self.state = .loggedOut
        return ended
    }

    // MARK: Helpers

    private mutating func startRefresh(_ kind: RefreshKind, trigger: Trigger, now: Instant) -> Fetch {
        self.lastAttempt += 1
        let replacing = self.token?.value
        self.state = .refreshing(
            Refresh(
                kind: kind,
                trigger: trigger,
                replacing: replacing,
                startedAt: now,
                phase: .calling(self.lastAttempt)
            )
        )
        return Fetch(attempt: self.lastAttempt, replacing: replacing)
    }

    /// Parks `waiter` with the running refresh.
    private mutating func park(_ waiter: Waiter, now: Instant) -> WaiterID {
        let id = self.nextWaiterID
        self.nextWaiterID += 1
        let waiting = Waiting(
            parked: Parked(id: id, waiter: waiter),
            since: now,
            joinedWhileDown: self.tokenSourceDown != nil
        )
        self.modifyRefresh { $0.waiters.append(waiting) }
        return id
    }

    /// Why a request must not wait: the token source is down and no call to it is in flight (a
    /// backoff runs). Not while the token endpoint's Retry-After runs: it answered, and asked to wait.
    private var downWithNoCallInFlight: SessionFailure? {
        guard let down = self.tokenSourceDown, case .refreshing(let refresh) = self.state,
            case .waiting = refresh.phase
        else { return nil }
        return down
    }

    /// What kind of refresh runs (nil: none).
    private var refreshKind: RefreshKind? {
        if case .refreshing(let refresh) = self.state { return refresh.kind }
        return nil
    }

    /// Mutates the running refresh in place: the state lets go of its copy first, so that a growing
    /// waiter list is appended to rather than copied (a storm of n parked requests stays O(n), not
    /// O(n²)). Nil when no refresh runs.
    @discardableResult
    private mutating func modifyRefresh<Result>(_ body: (inout Refresh) -> Result) -> Result? {
        guard case .refreshing(var refresh) = self.state else { return nil }
        self.state = .idle  // transient: replaced below, before anything can observe it
        let result = body(&refresh)
        self.state = .refreshing(refresh)
        return result
    }
}
