import BearerConfig
import BearerCore
import BearerIO
import Synchronization

/// Tokens from an app backend's JSON endpoints (token_format = json): a refresh at token_url, and a
/// login at login_url when there is no refresh token or the backend refused it.
///
/// The login fallback runs inside the one fetch the session started, under the same refresh-token
/// file lock, so the requests parked behind a refused refresh are all served by one login, and the
/// refresh token the login returns is stored like a rotated one.
package final class JSONTokenSource: TokenSource {
    let requests: JSONBackendRequests
    let store: RefreshTokenStore?
    let client: EndpointCaller
    let logger: Logger
    /// Where the refresh token file's lock is taken and released.
    let pool: BlockingWorkPool
    /// A refresh token the backend refused: not spent again while the file still holds it.
    private let refused = Locked<Secret<String>?>(nil)

    package init(
        settings: SessionSettings,
        store: RefreshTokenStore?,
        client: EndpointCaller,
        logger: Logger,
        pool: BlockingWorkPool = .shared
    ) {
        self.requests = JSONBackendRequests(settings: settings)
        self.store = store
        self.client = client
        self.logger = logger
        self.pool = pool
    }

    /// With login credentials the proxy can always try again, as with a password grant.
    package var canRetryWithoutNewCredentials: Bool { self.requests.canLogIn() }

    package var logDescription: String {
        [self.requests.tokenURL.map { "refresh at \($0)" }, self.requests.loginURL.map { "login at \($0)" }]
            .compactMap { $0 }.joined(separator: ", ")
    }

    package func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
        // Taking the file lock can block (another process refreshing): never on an event loop.
        self.pool.execute {
            let lease = self.store?.beginRefresh()
            let finish = endingRefresh(lease, in: self.store, pool: self.pool, logger: self.logger, then: completion)
            if let problem = lease?.unreadable {
                finish(.transient(reason: problem, timedOut: false))
                return
            }
            let refreshToken = lease?.token.flatMap { token in self.refused.withLock { $0 } == token ? nil : token }
            if let refreshToken, let request = self.requests.refresh(refreshToken) {
                self.call(request, isLogin: false, spending: refreshToken) { outcome in
                    guard case .permanent(let failure) = outcome, self.requests.canLogIn() else {
                        finish(outcome)
                        return
                    }
                    self.refused.withLock { $0 = refreshToken }
                    self.logger.info(
                        "refresh token refused; logging in",
                        ["error": failure.shortName, "login_url": self.requests.loginURL?.description ?? ""]
                    )
                    self.logIn(finish)
                }
            } else if self.requests.canLogIn() {
                self.logIn(finish)
            } else {
                finish(.permanent(.noRefreshToken(in: self.store)))
            }
        }
    }

    private func logIn(_ finish: @escaping @Sendable (TokenFetchOutcome) -> Void) {
        guard let request = self.requests.login() else {
            preconditionFailure("logIn is only called when canLogIn() holds, which needs login_url")
        }
        self.call(request, isLogin: true, spending: nil, finish)
    }

    /// One request to the refresh or login endpoint, its answer read as a token or a failure.
    private func call(
        _ request: EndpointRequest,
        isLogin: Bool,
        spending refreshToken: Secret<String>?,
        _ completion: @escaping @Sendable (TokenFetchOutcome) -> Void
    ) {
        let fields = self.requests.fields
        let requests = self.requests
        let store = self.store
        let canProve = self.client.dpop != nil
        self.client.send(request) { result in
            switch result {
            case .success(let response):
                var outcome = JSONTokenResponse.interpret(response, fields: fields, isLogin: isLogin)
                    .requiringProof(canProve: canProve)
                if case .permanent(let failure) = outcome {
                    outcome = .permanent(
                        failure.redactingDescription { requests.redacting($0, also: refreshToken.map { [$0] } ?? []) }
                            .remedied(by: .newRefreshToken(file: store?.path))
                    )
                }
                completion(outcome)
            case .failure(let error):
                completion(
                    .transient(
                        reason: "\(isLogin ? "login" : "token") endpoint \(request.url.origin): \(error.reason)",
                        timedOut: error.isTimeoutAfterConnect
                    )
                )
            }
        }
    }
}
