import BearerCore
import BearerSession

/// The polling of a device authorization grant (RFC 8628 §3.4, §3.5) as a value: the token
/// endpoint's answers go in, what to do next comes out. It does no I/O and reads no clock.
///
/// It stops at the earlier of the device code's expiry and login_timeout, and names which one ran out.
struct DeviceAuthorizationPoller {
    /// What the token endpoint answered to one poll.
    enum Answer: Equatable {
        /// `authorization_pending`: the user has not finished yet.
        case pending
        /// `slow_down`: poll less often (§3.5: the interval grows by 5 seconds, for good).
        case slowDown
        /// `access_denied`
        case denied(description: String?)
        /// `expired_token`
        case expired(description: String?)
        /// Tokens: the user approved.
        case approved
        /// Any other refusal (invalid_client, invalid_grant …).
        case refused(SessionFailure)
        /// No usable answer (connection refused, 5xx): worth another poll.
        case unavailable(reason: String)
    }

    enum Action: Equatable {
        case poll(after: Duration)
        case succeed
        case fail(LoginError)
    }

    /// §3.5: how much longer to wait after each `slow_down`.
    static let slowDownStep: Duration = .seconds(5)

    private(set) var interval: Duration
    private let lifetime: Duration
    private let expiresAt: Instant
    private let timeoutAt: Instant
    private let timeout: Duration
    private var lastUnavailableReason: String?

    /// `interval` and `expiresIn` from the device authorization response (RFC 8628 §3.2; the interval
    /// defaults to 5 seconds when the server names none); the login gives up at `loginDeadline`,
    /// login_timeout (`loginTimeout`) after it started.
    init(interval: Duration?, expiresIn: Duration, loginDeadline: Instant, loginTimeout: Duration, now: Instant) {
        self.interval = interval ?? .seconds(5)
        self.lifetime = expiresIn
        self.expiresAt = now + expiresIn
        self.timeoutAt = loginDeadline
        self.timeout = loginTimeout
    }

    /// The user has the code: the first poll waits one interval (§3.4).
    func started(now: Instant) -> Action {
        self.next(now: now)
    }

    mutating func answered(_ answer: Answer, now: Instant) -> Action {
        switch answer {
        case .approved:
            return .succeed
        case .pending:
            return self.next(now: now)
        case .slowDown:
            self.interval += Self.slowDownStep
            return self.next(now: now)
        case .denied(let description):
            return .fail(.denied(code: "access_denied", description: description))
        case .expired(let description):
            return .fail(.deviceCodeExpired(description: description))
        case .refused(let failure):
            return .fail(.refused(failure))
        case .unavailable(let reason):
            self.lastUnavailableReason = reason
            return self.next(now: now)
        }
    }

    /// Another poll after the interval, unless the device code or the login's time would run out first.
    private func next(now: Instant) -> Action {
        let at = now + self.interval
        if at >= self.timeoutAt && self.timeoutAt <= self.expiresAt {
            if let reason = self.lastUnavailableReason { return .fail(.unreachable(reason)) }
            return .fail(.timedOut(after: self.timeout, waitingFor: "the device login to be approved"))
        }
        if at >= self.expiresAt { return .fail(.deviceCodeLifetimeEnded(lifetime: self.lifetime)) }
        return .poll(after: self.interval)
    }
}
