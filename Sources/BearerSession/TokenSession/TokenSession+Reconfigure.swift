import BearerCore

/// SIGHUP: the session takes the token supply of the config it re-read (docs/operations.md, "Signals").
extension TokenSession {
    /// Puts `supply` in place of the current one: later token calls use its source and the refresh
    /// token it holds, and its storm guard. A changed access_token is put in use at once (its
    /// requests, parked ones too, are sent with it). The refresh token file is watched where the new
    /// supply keeps it. The caller refreshes afterwards if it wants a token from the new source.
    package func reconfigure(_ supply: TokenSupply) {
        let now = self.clock.now()
        let (action, answer, replacedStore) = self.modify { state -> (Machine.RefreshEndAction, TokenAnswer?, Bool) in
            let previous = state.supply
            state.supply = supply
            let settings = Self.machineSettings(supply, refreshTimeout: state.machine.settings.refreshTimeout)
            let token =
                supply.configuredToken == previous.configuredToken
                ? nil
                : supply.configuredToken.map { Self.makeToken($0, lifetime: nil, now: now, skew: supply.refreshSkew) }
            let action = state.machine.reconfigured(settings, configuredToken: token)
            var answer: TokenAnswer?
            if case .resume(let token, let generation, _) = action {
                answer = .send(Self.token(&state, token.value, generation))
            }
            return (action, answer, previous.store !== supply.store)
        }
        if case .resume(_, let generation, let ended) = action {
            self.logger.info(
                "access_token of the config put in use",
                ["generation": "\(generation)", "waiting_requests": "\(ended?.waiters.count ?? 0)"]
            )
            self.tell(ended, answer, .succeeded(generation: generation))
        }
        if replacedStore {
            self.fileWatcher.withLock { $0 }?.stop()
            self.fileWatcher.withLock { $0 = nil }
            self.watchRefreshTokenFile()
        }
    }
}
