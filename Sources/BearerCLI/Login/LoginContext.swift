import BearerConfig
import BearerCore
import BearerSession

/// What every way of logging in shares: the session's settings and the keys read from its files, the
/// one way out to endpoints, the console, and the instant login_timeout runs out.
struct LoginContext: Sendable {
    let settings: SessionSettings
    let credentials: SessionCredentials
    let client: EndpointCaller
    let console: Console
    let deadline: Instant
    /// Open the authorization URL with xdg-open/open (not with --no-browser).
    let opensBrowser: Bool

    /// The same context for `settings` (a registered client's id).
    func with(settings: SessionSettings) -> LoginContext {
        LoginContext(
            settings: settings,
            credentials: self.credentials,
            client: self.client,
            console: self.console,
            deadline: self.deadline,
            opensBrowser: self.opensBrowser
        )
    }

    /// A token endpoint's outcome as the login sees it: a token, or why not in one line.
    static func result(of outcome: TokenFetchOutcome) -> Result<FetchedToken, LoginError> {
        switch outcome {
        case .token(let token):
            .success(token)
        case .permanent(let failure):
            .failure(.refused(failure))
        case .transient(let reason, _):
            .failure(.unreachable(reason))
        case .rateLimited(let retryAfter):
            .failure(
                .unreachable("the endpoint asked to wait \(Int(retryAfter.seconds))s (Retry-After); try again then")
            )
        }
    }

    /// Sends a request and waits; a connection failure becomes a sentence naming the endpoint.
    func send(_ request: EndpointRequest, endpoint: String) -> Result<EndpointResponse, LoginError> {
        self.client.sendAndWait(request).mapError { .unreachable("\(endpoint) \(request.url.origin): \($0.reason)") }
    }
}
