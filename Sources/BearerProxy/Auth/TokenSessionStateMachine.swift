import BearerCore

/// The token session's logic: which token a request carries, when to refresh, who waits for it.
///
/// A value type with no I/O, no clock and no randomness of its own: events come in (a request needs
/// a token, an upstream rejected generation g, a refresh ended), actions go out (send with this token,
/// park, start one refresh, resume or fail these waiters). `TokenSession` holds it under a lock and
/// performs the actions. Implements CONTRACT.md, "The session and 401".
package struct TokenSessionStateMachine: Sendable {
    package typealias WaiterID = UInt64

    package struct Token: Equatable, Sendable {
        package var value: Secret<String>
        /// When the token stops working (from expires_in or a JWT exp); nil when unknown.
        package var expiresAt: Instant?
        /// When a proactive refresh starts; nil when the expiry is unknown.
        package var refreshAt: Instant?

        package init(value: Secret<String>, expiresAt: Instant? = nil, refreshAt: Instant? = nil) {
            self.value = value
            self.expiresAt = expiresAt
            self.refreshAt = refreshAt
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

    struct Waiter: Equatable, Sendable {
        var id: WaiterID
        var parkedAt: Instant
    }

    struct Refresh: Equatable, Sendable {
        var kind: RefreshKind
        var startedAt: Instant
        var attempt: Int
        var waiters: [Waiter]
        /// The token endpoint asked to wait until then (429/503 Retry-After).
        var retryAt: Instant?
        /// What the last failed attempt said, for requests that give up before the next one ends.
        var lastFailure: SessionFailure?
    }

    enum State: Equatable, Sendable {
        /// No refresh running. Valid transitions: .refreshing, .loggedOut.
        case idle
        /// One refresh is in flight (or waiting to retry). Valid transitions: .idle, .failed, .loggedOut.
        case refreshing(Refresh)
        /// The token endpoint refused the grant; requests fail at once. Valid transitions: .idle
        /// (new credentials), .refreshing (retry after the window), .loggedOut.
        case failed(SessionFailure, at: Instant)
        /// Tokens dropped on purpose. Valid transitions: .refreshing (forced refresh).
        case loggedOut
    }

    // MARK: Actions

    package enum RequestAction: Equatable, Sendable {
        case send(token: Secret<String>, generation: Int)
        /// There is no token and no way to get one: forward as is.
        case sendWithoutToken
        /// Send with the current token, and start a proactive refresh in the background.
        case sendAndStartRefresh(token: Secret<String>, generation: Int)
        case park
        case parkAndStartRefresh
        case fail(SessionFailure)
    }

    package enum RejectionAction: Equatable, Sendable {
        /// A newer token already exists: send again with it, no refresh.
        case replay(token: Secret<String>, generation: Int)
        case park
        case parkAndStartRefresh
        /// Give the client the upstream's answer (a replay's 401, nothing to refresh with, …).
        case forwardToClient
        /// The request cannot be replayed (body too large), but the token is bad: refresh for the others.
        case forwardToClientAndStartRefresh
        /// The storm guard stopped a refresh; `isFirst` is true once per window (for one log line).
        case forwardToClientStormGuard(isFirst: Bool)
        /// The upstream refused the current token and nothing can refresh it (no token source): the
        /// client gets the answer; `isFirst` is true once per token (for one warning).
        case forwardToClientUnrefreshable(isFirst: Bool)
    }

    package enum RefreshEndAction: Equatable, Sendable {
        case resume(waiters: [WaiterID], token: Secret<String>, generation: Int)
        case retry(after: Duration)
        case fail(waiters: [WaiterID], SessionFailure)
        /// A proactive refresh failed but the current token still works: keep using it.
        case keepCurrentToken(SessionFailure)
        /// The refresh ended after the session moved on (logged out): ignore it.
        case ignore
    }

    package enum RefreshResult: Equatable, Sendable {
        /// 400/401 from the token endpoint.
        package static func rejected(code: String, description: String?) -> RefreshResult {
            .permanent(.rejected(code: code, description: description))
        }

        case success(Token)
        /// The token source refused for good (400/401 from the token endpoint, a failing command).
        case permanent(SessionFailure)
        /// Connection refused or reset, 5xx, or (`answered: false` after a connection was accepted) no answer.
        case transient(reason: String, timedOut: Bool)
        /// 429/503 with Retry-After.
        case rateLimited(retryAfter: Duration)
    }

    // MARK: State

    package let settings: Settings
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

    /// The upstream refused the current token, and nothing can refresh it (`/status` shows it).
    package var isRejectedWithoutRefresh: Bool {
        !self.settings.canRefresh && self.generation > 0 && self.rejectedGeneration == self.generation
    }

    package var isRefreshing: Bool {
        if case .refreshing = self.state { return true }
        return false
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

    // MARK: Events

    /// At start: a session that can fetch a token but has none starts fetching it at once.
    package mutating func started(now: Instant) -> Bool {
        guard self.settings.canRefresh, self.token == nil, self.state == .idle else { return false }
        self.state = .refreshing(Refresh(kind: .reactive, startedAt: now, attempt: 0, waiters: []))
        return true
    }

    /// A request to an injected host is about to be sent.
    package mutating func requestNeedsToken(_ id: WaiterID, now: Instant) -> RequestAction {
        switch self.state {
        case .loggedOut:
            return .fail(.loggedOut)
        case .failed(let failure, let failedAt):
            if self.settings.canRetryWithoutNewCredentials && now - failedAt >= self.settings.refreshWindow {
                self.state = .refreshing(
                    Refresh(kind: .reactive, startedAt: now, attempt: 0, waiters: [Waiter(id: id, parkedAt: now)])
                )
                return .parkAndStartRefresh
            }
            return .fail(failure)
        case .refreshing:
            if self.refreshKind == .proactive, let token = self.token, !token.isExpired(at: now) {
                return .send(token: token.value, generation: self.generation)
            }
            self.modifyRefresh { $0.waiters.append(Waiter(id: id, parkedAt: now)) }
            return .park
        case .idle:
            guard let token = self.token else {
                guard self.settings.canRefresh else { return .sendWithoutToken }
                self.state = .refreshing(
                    Refresh(kind: .reactive, startedAt: now, attempt: 0, waiters: [Waiter(id: id, parkedAt: now)])
                )
                return .parkAndStartRefresh
            }
            guard self.settings.canRefresh else { return .send(token: token.value, generation: self.generation) }
            if token.isExpired(at: now) {
                // Expiry passed without the timer noticing (a laptop that slept): never send a dead token.
                self.state = .refreshing(
                    Refresh(kind: .reactive, startedAt: now, attempt: 0, waiters: [Waiter(id: id, parkedAt: now)])
                )
                return .parkAndStartRefresh
            }
            if let refreshAt = token.refreshAt, now >= refreshAt {
                self.state = .refreshing(Refresh(kind: .proactive, startedAt: now, attempt: 0, waiters: []))
                return .sendAndStartRefresh(token: token.value, generation: self.generation)
            }
            return .send(token: token.value, generation: self.generation)
        }
    }

    /// The upstream answered a status in refresh_on to a request stamped with `generation`.
    package mutating func upstreamRejected(
        _ id: WaiterID,
        generation: Int,
        isReplay: Bool,
        isReplayable: Bool,
        now: Instant
    ) -> RejectionAction {
        guard self.settings.canRefresh else { return self.rejectedWithoutRefresh(generation: generation) }
        guard !isReplay else { return .forwardToClient }
        switch self.state {
        case .loggedOut, .failed:
            return .forwardToClient
        case .refreshing:
            if generation < self.generation && self.refreshKind == .proactive, let token = self.token,
                !token.isExpired(at: now)
            {
                return isReplayable ? .replay(token: token.value, generation: self.generation) : .forwardToClient
            }
            let isCurrent = generation == self.generation
            self.modifyRefresh { refresh in
                // The token being replaced turned out dead already: stop sending it.
                if isCurrent { refresh.kind = .reactive }
                if isReplayable { refresh.waiters.append(Waiter(id: id, parkedAt: now)) }
            }
            return isReplayable ? .park : .forwardToClient
        case .idle:
            if generation < self.generation {
                guard let token = self.token, isReplayable else { return .forwardToClient }
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
            let waiters = isReplayable ? [Waiter(id: id, parkedAt: now)] : []
            self.state = .refreshing(Refresh(kind: .reactive, startedAt: now, attempt: 0, waiters: waiters))
            return isReplayable ? .parkAndStartRefresh : .forwardToClientAndStartRefresh
        }
    }

    /// Without a token source a refused token stays refused: noted for `/status`, warned of once per token.
    private mutating func rejectedWithoutRefresh(generation: Int) -> RejectionAction {
        // An older token than the current one (the session store brought a new one since) says nothing.
        guard generation == self.generation else { return .forwardToClient }
        let isFirst = self.warnedRejectedGeneration != generation
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

    /// The proactive-refresh timer fired.
    package mutating func proactiveRefreshDue(now: Instant) -> Bool {
        guard self.state == .idle, self.settings.canRefresh, let token = self.token, let refreshAt = token.refreshAt,
            now >= refreshAt
        else { return false }
        self.state = .refreshing(
            Refresh(kind: token.isExpired(at: now) ? .reactive : .proactive, startedAt: now, attempt: 0, waiters: [])
        )
        return true
    }

    /// The running refresh attempt ended.
    package mutating func refreshEnded(_ result: RefreshResult, now: Instant) -> RefreshEndAction {
        guard case .refreshing(var refresh) = self.state else { return .ignore }
        let waiterIDs = refresh.waiters.map(\.id)
        switch result {
        case .success(let token):
            self.generation += 1
            self.token = token
            self.currentTokenServedTraffic = false
            self.state = .idle
            return .resume(waiters: waiterIDs, token: token.value, generation: self.generation)

        case .permanent(let failure):
            if refresh.kind == .proactive, self.token != nil,
                let kept = self.keepTokenAfterFailedProactiveRefresh(now: now)
            {
                self.token = kept
                self.state = .idle
                return .keepCurrentToken(failure)
            }
            self.token = nil
            self.state = .failed(failure, at: now)
            return .fail(waiters: waiterIDs, failure)

        case .transient(let reason, let timedOut):
            let delay = Backoff.standard.delay(afterFailures: refresh.attempt + 1)
            let failure: SessionFailure = timedOut ? .timedOut(reason: reason) : .unreachable(reason: reason)
            if now - refresh.startedAt + delay < self.settings.refreshTimeout {
                refresh.attempt += 1
                refresh.lastFailure = failure
                self.state = .refreshing(refresh)
                return .retry(after: delay)
            }
            if refresh.kind == .proactive, self.token != nil,
                let kept = self.keepTokenAfterFailedProactiveRefresh(now: now)
            {
                self.token = kept
                self.state = .idle
                return .keepCurrentToken(failure)
            }
            self.state = .idle
            return .fail(waiters: waiterIDs, failure)

        case .rateLimited(let retryAfter):
            refresh.attempt += 1
            refresh.retryAt = now + retryAfter
            self.state = .refreshing(refresh)
            return .retry(after: retryAfter)
        }
    }

    /// Another proxy's token arrived through the session store: it becomes the current token, and a
    /// running refresh ends with it (its waiters are sent with it). A deliberate logout stays, and
    /// the token already in use changes nothing (a publication and a refresh may both bring it).
    package mutating func tokenAdopted(_ token: Token) -> RefreshEndAction {
        guard token.value != self.token?.value else { return .ignore }
        var waiterIDs: [WaiterID] = []
        switch self.state {
        case .loggedOut:
            return .ignore
        case .refreshing(let refresh):
            waiterIDs = refresh.waiters.map(\.id)
        case .idle, .failed:
            break
        }
        self.generation += 1
        self.token = token
        self.currentTokenServedTraffic = false
        self.state = .idle
        return .resume(waiters: waiterIDs, token: token.value, generation: self.generation)
    }

    /// After a failed proactive refresh: the current token, with the next attempt pushed back, or nil
    /// when it no longer works.
    private func keepTokenAfterFailedProactiveRefresh(now: Instant) -> Token? {
        guard var token = self.token, !token.isExpired(at: now) else { return nil }
        // Try again later, spreading the storm guard's allowance over the window.
        let retry = now + self.settings.refreshWindow / max(1, self.settings.maximumSuspectRefreshes)
        token.refreshAt = token.expiresAt.map { min($0, retry) } ?? retry
        return token
    }

    /// Parked requests that waited refresh_timeout give up: each fails with the reason.
    package mutating func expireWaiters(now: Instant) -> [(WaiterID, SessionFailure)] {
        let timeout = self.settings.refreshTimeout
        return self.modifyRefresh { refresh in Self.expire(&refresh, now: now, timeout: timeout) } ?? []
    }

    private static func expire(
        _ refresh: inout Refresh,
        now: Instant,
        timeout: Duration
    ) -> [(WaiterID, SessionFailure)] {
        var expired: [(WaiterID, SessionFailure)] = []
        let retryAt = refresh.retryAt
        let lastFailure = refresh.lastFailure
        refresh.waiters.removeAll { waiter in
            guard now - waiter.parkedAt >= timeout else { return false }
            if let retryAt, retryAt > now {
                let seconds = Int(((retryAt - now).nanoseconds + 999_999_999) / 1_000_000_000)
                expired.append((waiter.id, .rateLimited(retryAfterSeconds: seconds)))
            } else {
                expired.append(
                    (waiter.id, lastFailure ?? .timedOut(reason: "no new token within refresh_timeout"))
                )
            }
            return true
        }
        return expired
    }

    /// The earliest time a parked request gives up, for the caller's timer.
    package var nextWaiterDeadline: Instant? {
        // Waiters are appended as they park, so the first one parked earliest.
        guard case .refreshing(let refresh) = self.state, let first = refresh.waiters.first else { return nil }
        return first.parkedAt + self.settings.refreshTimeout
    }

    /// A parked request's client went away.
    package mutating func waiterCancelled(_ id: WaiterID) {
        self.modifyRefresh { refresh in
            if let index = refresh.waiters.firstIndex(where: { $0.id == id }) { refresh.waiters.remove(at: index) }
        }
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

    /// There is reason to believe a new attempt can succeed (a new refresh token in the file):
    /// leave a permanent failure, and let the next request fetch a token.
    package mutating func credentialsChanged() {
        if case .failed = self.state { self.state = .idle }
    }

    /// Forces a refresh now (SIGHUP, admin POST /refresh); returns whether one must start.
    package mutating func refreshRequested(now: Instant) -> Bool {
        guard self.settings.canRefresh else { return false }
        switch self.state {
        case .refreshing:
            return false
        case .idle, .failed, .loggedOut:
            self.state = .refreshing(
                Refresh(kind: self.token == nil ? .reactive : .proactive, startedAt: now, attempt: 0, waiters: [])
            )
            return true
        }
    }

    /// Drops the tokens on purpose (admin POST /logout); parked requests fail.
    package mutating func loggedOut() -> [WaiterID] {
        var waiters: [WaiterID] = []
        if case .refreshing(let refresh) = self.state { waiters = refresh.waiters.map(\.id) }
        self.token = nil
        self.state = .loggedOut
        return waiters
    }
}
