import BearerConfig
import BearerCore
import BearerSession

/// Why `bearer-proxy login` or `logout` could not do its job: one line for the person at the terminal,
/// naming what failed and what to do. Never a token, a code or a password.
enum LoginError: Error, Equatable, CustomStringConvertible {
    /// The configuration lacks what this way of logging in needs.
    case notConfigured(String)
    /// The user did not finish in time.
    case timedOut(after: Duration, waitingFor: String)
    /// The authorization server said no (error=access_denied on the callback, or while polling).
    case denied(code: String, description: String?)
    /// The token endpoint answered `expired_token` (RFC 8628 §3.5): the device code expired before the
    /// user approved it.
    case deviceCodeExpired(description: String?)
    /// The device code's `expires_in` ran out here before the user approved it: the next poll would
    /// only get `expired_token`, so none is sent. Named as this machine's finding, not the server's.
    case deviceCodeLifetimeEnded(lifetime: Duration)
    /// The token, login or device endpoint refused the request.
    case refused(SessionFailure)
    /// An endpoint could not be reached or answered nonsense.
    case unreachable(String)
    /// The answer had an access token but no refresh token, so there is nothing to store.
    case noRefreshToken(String)
    /// The refresh token file could not be written.
    case cannotStore(String)
    /// The loopback redirect listener could not be opened.
    case cannotListen(String)
    /// A value must be typed in, but there is no terminal to type it on.
    case noTerminal(String)

    var description: String {
        switch self {
        case .notConfigured(let what):
            what
        case .timedOut(let after, let waitingFor):
            "login timed out after \(ValueParsers.format(after)) waiting for \(waitingFor) (login_timeout)"
        case .denied(let code, let description):
            "the authorization server denied the login: \(code)" + (description.map { " (\(oneLine($0)))" } ?? "")
        case .deviceCodeExpired(let description):
            "the authorization server answered expired_token" + (description.map { " (\(oneLine($0)))" } ?? "")
                + ": the device code expired before the login was approved; run 'bearer-proxy login --device' again"
        case .deviceCodeLifetimeEnded(let lifetime):
            "the device code expired before the login was approved (its expires_in, \(ValueParsers.format(lifetime)), ran out;"
                + " the server would answer expired_token); run 'bearer-proxy login --device' again"
        case .refused(let failure):
            Self.refusal(failure)
        case .unreachable(let reason):
            oneLine(reason)
        case .noRefreshToken(let hint):
            "the answer carried no refresh token, so there is nothing to store (\(hint))"
        case .cannotStore(let reason):
            oneLine(reason)
        case .cannotListen(let reason):
            "cannot listen for the browser's redirect: \(oneLine(reason))"
        case .noTerminal(let what):
            what
        }
    }

    private static func refusal(_ failure: SessionFailure) -> String {
        switch failure {
        case .rejected(let code, let description, _):
            "the token endpoint refused the login: \(code)" + (description.map { " (\(oneLine($0)))" } ?? "")
        case .loginRejected(let code, let description):
            "the login endpoint refused the login: \(code)" + (description.map { " (\(oneLine($0)))" } ?? "")
        case .unreachable, .timedOut, .rateLimited, .loggedOut, .commandFailed, .noRefreshToken:
            failure.message
        }
    }
}
