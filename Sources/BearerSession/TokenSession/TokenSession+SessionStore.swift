import BearerCore
import BearerIO

/// The token session in a fleet (session_store): refreshes go through the store, so one proxy calls
/// the token endpoint and the others adopt what it stored; tokens other proxies store are adopted as
/// they are published. Implements docs/fleet.md's "Running a fleet".
extension TokenSession {
    /// One refresh for the fleet. The token call runs only here if this proxy takes the lock and
    /// the store has no other usable token; it spends the fleet's refresh token.
    func refreshThroughStore(_ sessionStore: SessionStore, source: TokenSource, _ fetch: Machine.Fetch) {
        let refreshTokens = self.store
        let logger = self.logger
        let blockingWork = self.blockingWork
        sessionStore.refresh(
            replacing: fetch.replacing,
            fetch: { refreshToken, completion in
                // Writing the refresh token file can block: off the event loops.
                blockingWork.execute {
                    if let refreshToken { refreshTokens?.replace(with: refreshToken, logger: logger) }
                    source.fetch { outcome in completion(Self.keepingRefreshToken(outcome, refreshTokens)) }
                }
            },
            completion: { result in
                self.storeRefreshEnded(result, attempt: fetch.attempt, sessionStore: sessionStore)
            }
        )
    }

    private func storeRefreshEnded(
        _ result: SessionStore.RefreshResult,
        attempt: Machine.AttemptID,
        sessionStore: SessionStore
    ) {
        switch result {
        case .adopted(let stored):
            self.adopt(stored, cause: "refresh")
        case .refreshed(let stored, let isStored):
            if !isStored {
                self.logger.warn(
                    "session store unreachable after the token call; the new token is used here and stored once the store is back",
                    ["store": sessionStore.endpoint.description]
                )
            }
            let now = self.clock.now()
            let token = self.token(from: stored, now: now)
            self.endRefresh(cause: "ok", now: now) { $0.refreshEnded(attempt, .success(token), now: now) }
        case .fetchFailed(let outcome), .fetchedAlone(let outcome):
            self.fetchEnded(attempt, outcome)
        case .stopped:
            break
        }
    }

    /// A token another proxy stored, noticed outside a refresh of this proxy's (a publication, a
    /// poll, the read at start).
    func adoptStored(_ stored: StoredSession) {
        self.adopt(stored, cause: "store")
    }

    private func adopt(_ stored: StoredSession, cause: String) {
        if let refreshToken = stored.refreshToken, let refreshTokens = self.store {
            // The fleet's newest refresh token, for a refresh here while the store is away.
            let logger = self.logger
            self.blockingWork.execute { refreshTokens.replace(with: refreshToken, logger: logger) }
        }
        let now = self.clock.now()
        let token = self.token(from: stored, now: now)
        self.endRefresh(cause: cause, adoptedGeneration: stored.generation, now: now) { $0.tokenAdopted(token) }
    }

    /// The token as this process tracks it: the stored wall-clock expiry becomes a monotonic one.
    private func token(from stored: StoredSession, now: Instant) -> Machine.Token {
        let lifetime = stored.expiresAtMilliseconds.map { Duration.milliseconds($0 - wallClockMilliseconds()) }
        return Self.makeToken(stored.accessToken, lifetime: lifetime, now: now, skew: self.refreshSkew)
    }

    /// The outcome with the refresh token to store next to the access token: the rotated one, else the
    /// one just spent (still valid), so proxies without their own refresh token can refresh too.
    static func keepingRefreshToken(
        _ outcome: TokenFetchOutcome,
        _ refreshTokens: RefreshTokenStore?
    ) -> TokenFetchOutcome {
        guard case .token(var fetched) = outcome, fetched.refreshToken == nil else { return outcome }
        fetched.refreshToken = refreshTokens?.current
        return .token(fetched)
    }
}
