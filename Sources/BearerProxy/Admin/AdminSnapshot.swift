import BearerCore
import BearerSession

/// One second of the proxy as `/events` sends it (and the admin page draws it): each shown session's
/// state, refreshes, and its request, upstream-401 and parked counts, and the proxy's totals. Never a token: the
/// session's `Status` holds none, and the store shows its URL with the password redacted.
struct AdminSnapshot {
    /// The totals the previous snapshot saw, for rates over the time between them.
    struct Totals {
        var at: Instant
        var requests: Int
        var rejections: Int
        /// By session index.
        var bySession: [LoopMetrics.SessionCounts]
    }

    let totals: Totals
    let json: String

    /// The snapshot at `now`, with rates since `previous` (none: the first, whose rates are 0).
    init(runtime: ProxyRuntime, loops: LoopMetrics, now: Instant, previous: Totals?) {
        let totals = Totals(
            at: now,
            requests: loops.requestsByClass.reduce(0, +),
            rejections: loops.upstreamRejections,
            bySession: loops.bySession
        )
        func rate(_ count: Int, _ before: Int) -> Double {
            guard let previous, now > previous.at else { return 0 }
            return (Double(count - before) / (now - previous.at).seconds * 10).rounded() / 10
        }
        func counts(_ index: Int, in totals: Totals?) -> LoopMetrics.SessionCounts {
            guard let totals, index < totals.bySession.count else { return LoopMetrics.SessionCounts() }
            return totals.bySession[index]
        }
        let sessions = runtime.shownSessions.map { session in
            let current = counts(session.index, in: totals)
            let before = counts(session.index, in: previous)
            return Self.fields(session).merging([
                "requests_per_second": rate(current.requests, before.requests),
                "upstream_401s_per_second": rate(current.upstreamRejections, before.upstreamRejections),
                "requests_total": current.requests,
                "upstream_401s_total": current.upstreamRejections,
            ]) { $1 }
        }
        let object: [String: Any] = [
            "at": formatTimestamp(wallClockSeconds()),
            "requests_per_second": rate(totals.requests, previous?.requests ?? 0),
            "upstream_401s_per_second": rate(totals.rejections, previous?.rejections ?? 0),
            "requests_total": totals.requests,
            "upstream_401s_total": totals.rejections,
            "parked_requests": sessions.reduce(0) { $0 + ($1["parked_requests"] as? Int ?? 0) },
            "sessions": sessions,
        ]
        self.totals = totals
        self.json = JSONText.text(of: object)
    }

    /// A session's part: what `/status` shows of it, and the refreshes of the last hour.
    private static func fields(_ session: NamedSession) -> [String: Any] {
        let status = session.tokens.status
        var state = status.state
        if state == "ready" && session.tokens.isWaitingOutStormGuard {
            state = "storm_guard"
        }
        return [
            "name": session.name,
            "upstream": session.settings.upstream?.description ?? "",
            "state": state,
            "failure": status.failure ?? JSONNull(),
            "token_expires_in_s": status.expiresInSeconds.map { ($0 * 10).rounded() / 10 } ?? JSONNull(),
            "token_generation": status.generation,
            "store": Self.store(of: session),
            "parked_requests": status.parked,
            "refreshes_last_hour": status.refreshesInLastHour,
            "last_refresh": status.lastRefreshOutcome.map { outcome -> Any in
                [
                    "outcome": outcome,
                    "at": status.lastRefreshWallTime.map(formatTimestamp) ?? "",
                    "duration_s": status.lastRefreshSeconds.map { ($0 * 1000).rounded() / 1000 } ?? JSONNull(),
                ] as [String: Any]
            } ?? JSONNull(),
        ]
    }

    /// Where the session's tokens are kept: the shared Redis store (its URL, password redacted), the
    /// refresh token's store (`file` or `secret-service`, as /status names it), or this process's
    /// memory only.
    private static func store(of session: NamedSession) -> String {
        if let store = session.tokens.sessionStore?.status { return "redis \(store.store)" }
        return session.refreshTokenStoreName ?? "memory"
    }
}

extension NamedSession {
    /// Which store keeps the session's refresh token (`file` or `secret-service`), for /status and the
    /// page alike; nil for a session that does not spend one.
    var refreshTokenStoreName: String? {
        self.settings.effectiveGrantType == .refreshToken ? self.tokens.store?.storeName : nil
    }
}
