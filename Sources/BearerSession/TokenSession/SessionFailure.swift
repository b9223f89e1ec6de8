import BearerCore

/// Why a request that needed a token cannot have one: what its client is answered instead.
///
/// Messages name the cause and what to do; they carry the token endpoint's error code and
/// description (which are the endpoint's words, not secrets) but never a token. A condition found on
/// this machine (no refresh token file yet, a failing command) is never worded as a server's answer.
package enum SessionFailure: Equatable, Sendable {
    /// The token endpoint refused the grant (400/401: invalid_grant, invalid_client, …). Permanent.
    /// `remedy`: what fixes it, which depends on the grant and the error (`RejectionRemedy`).
    case rejected(code: String, description: String?, remedy: RejectionRemedy = .credentials)
    /// A JSON backend's login endpoint refused the credentials (after the refresh token was refused,
    /// or with none to refresh). Permanent.
    case loginRejected(code: String, description: String?)
    /// The token endpoint could not be reached or failed (connection refused, 5xx). Transient.
    case unreachable(reason: String)
    /// The token endpoint accepted the connection but did not answer within refresh_timeout.
    case timedOut(reason: String)
    /// The token endpoint asked to wait (429/503 Retry-After) longer than refresh_timeout.
    case rateLimited(retryAfterSeconds: Int)
    /// The session was logged out on purpose (admin POST /logout).
    case loggedOut
    /// token_command failed (non-zero exit, empty output); the reason carries its stderr.
    case commandFailed(reason: String)

    /// There is no refresh token to spend: refresh_token_file does not exist yet (no `bearer-proxy
    /// login` so far), is empty, or cannot be read, or a logout dropped the configured refresh_token.
    /// Found on this machine: the token endpoint was not called. Permanent until the file changes.
    case noRefreshToken(file: String?, reason: String)

    /// No refresh token in `store`, and why, from a look at its file. Blocking: off the event loops.
    static func noRefreshToken(in store: RefreshTokenStore?) -> SessionFailure {
        .noRefreshToken(file: store?.path, reason: store?.absenceReason() ?? "none is configured")
    }

    package var status: Int {
        switch self {
        case .rejected, .loginRejected, .loggedOut, .noRefreshToken: 401
        case .unreachable, .commandFailed: 502
        case .timedOut: 504
        case .rateLimited: 503
        }
    }

    package var message: String {
        switch self {
        case .rejected(let code, let description, let remedy):
            "bearer-proxy: token refresh failed: the token endpoint answered \(code)"
                + (description.map { " (\(oneLine($0)))" } ?? "") + "; " + remedy.sentence
        case .loginRejected(let code, let description):
            "bearer-proxy: login failed: the login endpoint answered \(code)"
                + (description.map { " (\(oneLine($0)))" } ?? "")
                + "; fix username/password in the config, then send SIGHUP (the proxy re-reads its config), or run 'bearer-proxy login'"
        case .unreachable(let reason):
            "bearer-proxy: token refresh failed: \(oneLine(reason))"
        case .timedOut(let reason):
            "bearer-proxy: token refresh timed out: \(oneLine(reason)) (refresh_timeout)"
        case .rateLimited(let seconds):
            "bearer-proxy: the token endpoint asked to wait \(seconds)s before the next refresh (Retry-After)"
        case .loggedOut:
            "bearer-proxy: the session was logged out; POST /refresh or send SIGHUP to get a token again"
        case .commandFailed(let reason):
            "bearer-proxy: token_command failed: \(oneLine(reason))"
        case .noRefreshToken(.some, let reason):
            "bearer-proxy: no refresh token yet: \(oneLine(reason)); run 'bearer-proxy login' (a running proxy picks the new file up by itself)"
        case .noRefreshToken(nil, let reason):
            "bearer-proxy: no refresh token: \(oneLine(reason)); restart the proxy, or set refresh_token_file and run 'bearer-proxy login'"
        }
    }

    /// Extra response fields (Retry-After for a rate-limited refresh).
    package var extraFields: [(String, String)] {
        if case .rateLimited(let seconds) = self { return [("Retry-After", "\(seconds)")] }
        return []
    }

    /// A bounded label for logs and metrics.
    package var shortName: String {
        switch self {
        case .rejected, .loginRejected: "rejected"
        case .unreachable: "unreachable"
        case .timedOut: "timeout"
        case .rateLimited: "rate_limited"
        case .loggedOut: "logged_out"
        case .commandFailed: "command_failed"
        case .noRefreshToken: "no_refresh_token"
        }
    }
}
