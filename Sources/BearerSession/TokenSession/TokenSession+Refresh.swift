import BearerCore
import BearerIO

/// Token calls and how refreshes end: the machine decides, this performs (the call, the log line,
/// the waiters and observers told, in that order), and operators' refreshes and logouts.
extension TokenSession {
    // MARK: Token calls

    /// Makes the token call the machine asked for; its end names the attempt.
    func startFetch(_ fetch: Machine.Fetch) {
        guard let source = self.source else { preconditionFailure("a token call without a token source") }
        if let sessionStore = self.sessionStore {
            self.refreshThroughStore(sessionStore, source: source, fetch)
        } else {
            source.fetch { outcome in self.fetchEnded(fetch.attempt, outcome) }
        }
    }

    func fetchEnded(_ attempt: Machine.AttemptID, _ outcome: TokenFetchOutcome) {
        let now = self.clock.now()
        let result: Machine.RefreshResult
        switch outcome {
        case .token(let fetched):
            var token = Self.makeToken(
                fetched.accessToken,
                lifetime: fetched.expiresIn,
                now: now,
                skew: self.refreshSkew
            )
            token.isDPoPBound = fetched.isDPoPBound
            result = .success(token)
        case .permanent(let failure):
            result = .permanent(failure)
        case .transient(let reason, let timedOut):
            result = .transient(reason: reason, timedOut: timedOut)
        case .rateLimited(let retryAfter):
            result = .rateLimited(retryAfter: retryAfter)
        }
        self.endRefresh(cause: Self.describe(outcome), now: now) { $0.refreshEnded(attempt, result, now: now) }
    }

    /// Feeds the end of a token call (or an adopted token) to the machine and performs its answer:
    /// the log line first (whoever reads the log sees the refresh before the requests it served),
    /// then the waiters, then the observers. `adoptedGeneration` is the store's generation of a token
    /// another proxy fetched.
    func endRefresh(
        cause: String,
        adoptedGeneration: Int? = nil,
        now: Instant,
        _ event: (inout Machine) -> Machine.RefreshEndAction
    ) {
        let (action, answer) = self.modify { state -> (Machine.RefreshEndAction, TokenAnswer?) in
            let action = event(&state.machine)
            state.records.note(action, isAdoption: adoptedGeneration != nil, now: now)
            switch action {
            case .resume(let token, let generation, _):
                return (action, .send(Self.token(&state, token.value, generation)))
            case .fail(let failure, _):
                return (action, .fail(failure))
            case .keepCurrentToken, .retry, .ignore:
                return (action, nil)
            }
        }
        switch action {
        case .resume(let token, let generation, let ended):
            self.logNewToken(token, generation, ended, adoptedGeneration: adoptedGeneration, cause: cause, now: now)
            self.tell(ended, answer, .succeeded(generation: generation))
        case .fail(let failure, let ended):
            self.logFailure(failure, ended: ended, now: now)
            self.tell(ended, answer, .failed(failure))
        case .keepCurrentToken(let failure, let ended):
            self.logger.warn(
                "proactive token refresh failed; the current token is kept until it expires or is rejected",
                ["error": failure.shortName, "reason": failure.message]
            )
            self.tell(ended, nil, .failed(failure))
        case .retry(let delay, let becameUnreachable, let gaveUp):
            if becameUnreachable {
                // Said at once, as a warning: a wrong token_url or a stopped server is found here.
                self.logger.warn(
                    "token endpoint unreachable; requests that need a token fail until it answers, and it is retried",
                    ["cause": cause, "retry_after_ms": "\(Int(delay.milliseconds))"]
                )
            } else {
                self.logger.info(
                    "token refresh will be retried",
                    ["after_ms": "\(Int(delay.milliseconds))", "cause": cause]
                )
            }
            if let gaveUp {
                for parked in gaveUp.waiters { parked.waiter.resume(parked.id, .fail(gaveUp.failure)) }
            }
        case .ignore:
            break
        }
    }

    private func logNewToken(
        _ token: Machine.Token,
        _ generation: Int,
        _ ended: Machine.EndedRefresh?,
        adoptedGeneration: Int?,
        cause: String,
        now: Instant
    ) {
        let expires = token.expiresAt.map { "\(Int(($0 - now).seconds))s" } ?? "unknown"
        // waiting_requests: the requests that were held for this token (new ones, and ones that got a
        // 401 and are replayed), now sent with it.
        let waiting = "\(ended?.waiters.count ?? 0)"
        if let adoptedGeneration {
            self.logger.info(
                "token adopted from the session store",
                [
                    "generation": "\(generation)", "store_generation": "\(adoptedGeneration)", "via": cause,
                    "expires_in": expires, "waiting_requests": waiting,
                ]
            )
        } else {
            self.logger.info(
                "token refreshed",
                [
                    "generation": "\(generation)", "trigger": ended?.trigger.name ?? "",
                    "duration_ms": Self.milliseconds(since: ended, now), "expires_in": expires,
                    "waiting_requests": waiting,
                ]
            )
        }
    }

    private func logFailure(_ failure: SessionFailure, ended: Machine.EndedRefresh, now: Instant) {
        if case .noRefreshToken(.some, let reason) = failure {
            // Nothing was asked of the token endpoint: this is about the file, and what fills it.
            self.logger.warn(
                "no refresh token yet; run 'bearer-proxy login'",
                ["reason": reason, "failed_requests": "\(ended.waiters.count)"]
            )
            return
        }
        self.logger.warn(
            "token refresh failed",
            [
                "error": failure.shortName, "status": "\(failure.status)", "reason": failure.message,
                "failed_requests": "\(ended.waiters.count)", "duration_ms": Self.milliseconds(since: ended, now),
            ]
        )
    }

    private static func milliseconds(since ended: Machine.EndedRefresh?, _ now: Instant) -> String {
        String(Int(ended.map { now - $0.startedAt }?.milliseconds ?? 0))
    }

    /// Tells whoever waited for the refresh that ended: each parked request gets `answer` on its own
    /// loop (none: they keep waiting), each observer `outcome`.
    func tell(_ ended: Machine.EndedRefresh?, _ answer: TokenAnswer?, _ outcome: RefreshOutcome) {
        guard let ended else { return }
        if let answer {
            for parked in ended.waiters { parked.waiter.resume(parked.id, answer) }
        }
        for observer in ended.observers { observer.tell(outcome) }
    }

    static func describe(_ outcome: TokenFetchOutcome) -> String {
        switch outcome {
        case .token: "ok"
        case .permanent(let failure): failure.shortName
        case .transient(let reason, _): oneLine(reason)
        case .rateLimited(let retryAfter): "rate limited for \(Int(retryAfter.seconds))s"
        }
    }

    /// A token with its expiry (from `expires_in`, else a JWT `exp`) and proactive refresh time:
    /// `refresh_skew` before expiry, at most half the lifetime, minus up to 10% jitter so that
    /// several proxies sharing a token do not all refresh at the same instant.
    static func makeToken(
        _ value: Secret<String>,
        lifetime: Duration?,
        now: Instant,
        skew: Duration
    ) -> Machine.Token {
        var lifetime = lifetime
        if lifetime == nil, let exp = JWTExpiry.expiry(of: value.reveal()) {
            lifetime = .milliseconds(Int64((exp - wallClockSeconds()) * 1000))
        }
        guard let lifetime else { return Machine.Token(value: value) }
        let expiresAt = now + lifetime
        let effectiveSkew = min(skew, lifetime / 2)
        let jitter = effectiveSkew * Double.random(in: 0..<0.1)
        return Machine.Token(value: value, expiresAt: expiresAt, refreshAt: expiresAt - effectiveSkew + jitter)
    }

    // MARK: Operator actions

    /// Starts a refresh now unless one runs; `observer` hears how it (or the running one) ended.
    /// `parks`: requests wait for its token meanwhile (`refreshRequested`). Returns false when there
    /// is nothing to refresh with.
    @discardableResult
    package func forceRefresh(
        trigger: String,
        parks: Bool = false,
        observer: (@Sendable (RefreshOutcome) -> Void)? = nil
    ) -> Bool {
        let now = self.clock.now()
        let observer = observer.map(RefreshObserver.init)
        switch self.modify({ $0.machine.refreshRequested(by: trigger, parks: parks, observer: observer, now: now) }) {
        case .start(let fetch):
            self.startFetch(fetch)
            return true
        case .join:
            return true
        case .unavailable:
            return false
        }
    }

    /// Admin POST /logout: drop the tokens; waiting and later requests get 401 until a refresh is
    /// forced, and whoever forced the refresh that was running hears it ended so. Returns the refresh
    /// token that was in use (for revocation).
    package func logOut() -> Secret<String>? {
        let ended = self.modify { state -> Machine.EndedRefresh? in
            state.line = nil
            state.records.lastOutcome = ("logged_out", wallClockSeconds())
            return state.machine.loggedOut()
        }
        self.tell(ended, .fail(.loggedOut), .failed(.loggedOut))
        self.logger.info("session logged out", ["failed_requests": "\(ended?.waiters.count ?? 0)"])
        return self.store?.forget()
    }
}
