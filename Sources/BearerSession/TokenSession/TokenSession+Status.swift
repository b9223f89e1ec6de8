import BearerCore

/// What the session shows of itself: `/status`, `/metrics`, and the records they read.
extension TokenSession {
    /// What the session remembers of ended refreshes.
    struct Records {
        var lastOutcome: (outcome: String, wallTime: Double)?
        /// How long the last refresh took (nil: none ended, or a token adopted without one).
        var lastDuration: Double?
        /// What started the last refresh (its log line's `trigger`; nil as `lastDuration`).
        var lastTrigger: String?
        /// How many requests waited for it (its log line's `waiting_requests`).
        var lastWaiting: Int?
        /// When refreshes ended, the last hour's (the admin page's "refreshes in the last hour"),
        /// oldest first; bounded by the hour and by `recentLimit`.
        var recentEnds: [Instant] = []
        var metrics = SessionMetrics()

        static let recentLimit = 4096

        /// Notes how a refresh (or an adoption) ended; a retry, or an end the machine ignored, is none.
        mutating func note(_ action: Machine.RefreshEndAction, isAdoption: Bool, now: Instant) {
            let outcome: String
            let metric: String
            let ended: Machine.EndedRefresh?
            switch action {
            case .resume(_, _, let refresh):
                outcome = isAdoption ? "adopted" : "ok"
                metric = outcome
                ended = refresh
            case .fail(let failure, let refresh):
                outcome = failure.shortName
                metric = outcome
                ended = refresh
            case .keepCurrentToken(let failure, let refresh):
                outcome = failure.shortName
                metric = "kept"
                ended = refresh
            case .retry, .ignore:
                return
            }
            self.lastOutcome = (outcome, wallClockSeconds())
            self.metrics.refreshes[metric, default: 0] += 1
            // A token adopted while no refresh ran took none of this proxy's time.
            self.lastDuration = ended.map { (now - $0.startedAt).seconds }
            self.lastTrigger = ended?.trigger.name
            self.lastWaiting = ended?.waiters.count
            if let duration = self.lastDuration { self.metrics.refreshDuration.record(duration) }
            self.recentEnds.removeFirst(max(0, self.recentEnds.count + 1 - Self.recentLimit))
            self.recentEnds.append(now)
        }

        /// How many refreshes ended in the hour before `now`.
        func endedInLastHour(now: Instant) -> Int {
            let since = now - .seconds(3600)
            return self.recentEnds.count - (self.recentEnds.firstIndex { $0 > since } ?? self.recentEnds.count)
        }
    }

    /// What a person can do about a refused token nothing refreshes: the keys that give the proxy a way
    /// to new tokens (docs/token-sources.md, "Tokens: refresh on expiry, replay, never a 401 for the client").
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
    package var metrics: SessionMetrics { self.state.withLock { $0.records.metrics } }
    package var parkedCount: Int { self.state.withLock { $0.machine.parkedCount } }
    /// Refusals of the current token go to clients now, not to a refresh (the storm guard's wait).
    package var isWaitingOutStormGuard: Bool {
        let now = self.clock.now()
        return self.state.withLock { $0.machine.isHoldingStormGuard(at: now) }
    }

    /// What `/status` shows: never a token.
    package struct Status: Sendable {
        package var state: String
        package var generation: Int
        package var expiresInSeconds: Double?
        package var lastRefreshOutcome: String?
        package var lastRefreshWallTime: Double?
        package var lastRefreshSeconds: Double?
        package var lastRefreshTrigger: String?
        package var lastRefreshWaiting: Int?
        package var refreshesInLastHour: Int
        package var parked: Int
        package var failure: String?
    }

    package var status: Status {
        let now = self.clock.now()
        let (machine, records) = self.state.withLock { ($0.machine, $0.records) }
        let lastOutcome = records.lastOutcome
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
            lastRefreshOutcome: lastOutcome?.outcome,
            lastRefreshWallTime: lastOutcome?.wallTime,
            lastRefreshSeconds: records.lastDuration,
            lastRefreshTrigger: records.lastTrigger,
            lastRefreshWaiting: records.lastWaiting,
            refreshesInLastHour: records.endedInLastHour(now: now),
            parked: machine.parkedCount,
            failure: (machine.failure ?? machine.unreachableFailure)?.message
                ?? (machine.isRejectedWithoutRefresh ? self.rejectionText : nil)
        )
    }
}
