import BearerCore

/// What the token session's events answer: commands for `TokenSession` to perform, named as such.
extension TokenSessionStateMachine {
    package enum RequestAction: Equatable, Sendable {
        case send(token: Secret<String>, generation: Int)
        /// There is no token and no way to get one: forward as is.
        case sendWithoutToken
        /// Send with the current token, and make the token call of a proactive refresh.
        case sendAndStartRefresh(token: Secret<String>, generation: Int, Fetch)
        /// Wait for the running refresh.
        case park(WaiterID)
        /// Wait for the refresh this request starts.
        case parkAndStartRefresh(WaiterID, Fetch)
        case fail(SessionFailure)
    }

    package enum RejectionAction: Equatable, Sendable {
        /// A newer token already exists: send again with it, no refresh.
        case replay(token: Secret<String>, generation: Int)
        case park(WaiterID)
        case parkAndStartRefresh(WaiterID, Fetch)
        /// Give the client the upstream's answer (a replay's 401, nothing to refresh with, …).
        case forwardToClient
        /// The session cannot get a token now (it failed for good, was logged out, or its token source
        /// is down): the client gets this failure, as the requests that waited for the refresh did.
        case fail(SessionFailure)
        /// The request cannot be replayed (body too large), but the token is bad: refresh for the others.
        case forwardToClientAndStartRefresh(Fetch)
        /// The storm guard stopped a refresh; `isFirst` is true once per window (for one log line).
        case forwardToClientStormGuard(isFirst: Bool)
        /// The upstream refused the current token and nothing can refresh it (no token source): the
        /// client gets the answer; `isFirst` is true once per token (for one warning).
        case forwardToClientUnrefreshable(isFirst: Bool)
    }

    /// The refresh an action ends: what its log line and metrics say, and who waited for it.
    package struct EndedRefresh: Equatable, Sendable {
        package var trigger: Trigger
        package var startedAt: Instant
        package var waiters: [Parked]
        package var observers: [Observer]

        package init(trigger: Trigger, startedAt: Instant, waiters: [Parked] = [], observers: [Observer] = []) {
            self.trigger = trigger
            self.startedAt = startedAt
            self.waiters = waiters
            self.observers = observers
        }
    }

    package enum RefreshEndAction: Equatable, Sendable {
        /// A new token, the session's generation `generation`: the waiters of the refresh it ends (nil:
        /// none ran, a token adopted from the session store) are sent with it.
        case resume(Token, generation: Int, ended: EndedRefresh?)
        /// The call failed for now; the next starts when the deadline passes. `becameUnreachable`: the
        /// token source was up until this call (worth a warning). `gaveUp`: the requests that parked
        /// knowing the source was down, failed now rather than kept through the retries.
        case retry(after: Duration, becameUnreachable: Bool, gaveUp: GaveUp?)
        case fail(SessionFailure, ended: EndedRefresh)
        /// A proactive refresh failed but the current token still works: keep using it.
        case keepCurrentToken(SessionFailure, ended: EndedRefresh)
        /// The call ended after the session moved on (a logout, an adopted token): nothing to do.
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
        /// Connection refused or reset, 5xx, or (`timedOut` after a connection was accepted) no answer.
        case transient(reason: String, timedOut: Bool)
        /// 429/503 with Retry-After.
        case rateLimited(retryAfter: Duration)
    }

    /// Parked requests that give up, and what they are told.
    package struct GaveUp: Equatable, Sendable {
        package var waiters: [Parked]
        package var failure: SessionFailure

        package init(waiters: [Parked], failure: SessionFailure) {
            self.waiters = waiters
            self.failure = failure
        }
    }

    /// What the passing of the session's deadline asks for; both may come at once.
    package struct DeadlineAction: Equatable, Sendable {
        /// Parked requests that waited refresh_timeout.
        package var gaveUp: GaveUp?
        /// A token call to make: a proactive refresh is due, or a failed call's wait is over.
        package var fetch: Fetch?

        package init(gaveUp: GaveUp? = nil, fetch: Fetch? = nil) {
            self.gaveUp = gaveUp
            self.fetch = fetch
        }
    }

    package enum RequestedRefreshAction: Equatable, Sendable {
        case start(Fetch)
        /// A refresh runs already: the observer hears how it ends.
        case join
        /// Nothing to refresh with (no token_url, no token_command).
        case unavailable
    }
}
