import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO
import Dispatch

/// Where new tokens come from: the OAuth2 token endpoint or a command.
package protocol TokenSource: Sendable {
    /// Fetches one token; `completion` runs on any thread, exactly once.
    func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void)

    /// Whether the grant can be repeated without new credentials (after a permanent failure, once
    /// the storm-guard window has passed).
    var canRetryWithoutNewCredentials: Bool { get }

    /// For log lines: `token_url=…` or `token_command=…`.
    var logDescription: String { get }
}

/// OAuth2 grants against `token_url` (RFC 6749), non-blocking on an event loop.
package final class OAuth2TokenSource: TokenSource {
    let builder: TokenRequestBuilder
    let store: RefreshTokenStore?
    let client: EndpointCaller
    let logger: Logger
    /// Where the refresh token file's lock is taken and released.
    let pool: BlockingWorkPool

    package init(
        settings: SessionSettings,
        credentials: SessionCredentials,
        url: HTTPURL,
        store: RefreshTokenStore?,
        client: EndpointCaller,
        logger: Logger,
        pool: BlockingWorkPool = .shared
    ) {
        self.builder = TokenRequestBuilder(settings: settings, credentials: credentials, url: url)
        self.store = settings.effectiveGrantType == .refreshToken ? store : nil
        self.client = client
        self.logger = logger
        self.pool = pool
    }

    package var canRetryWithoutNewCredentials: Bool { self.builder.grant != .refreshToken }
    package var logDescription: String { self.builder.url.description }

    package func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
        // Taking the file lock can block (another process refreshing): never on an event loop.
        self.pool.execute {
            let lease = self.store?.beginRefresh()
            let finish = endingRefresh(lease, in: self.store, pool: self.pool, logger: self.logger, then: completion)
            if let problem = lease?.unreadable {
                finish(.transient(reason: problem, timedOut: false))
                return
            }
            if self.builder.grant == .refreshToken && lease?.token == nil {
                finish(.permanent(.noRefreshToken(in: self.store)))
                return
            }
            let url = self.builder.url
            self.client.send(self.builder.request(refreshToken: lease?.token)) { result in
                switch result {
                case .success(let response):
                    let outcome = TokenEndpointResponse.interpret(response)
                    finish(self.remedied(outcome.requiringProof(canProve: self.client.dpop != nil)))
                case .failure(let error):
                    finish(
                        .transient(
                            reason: "token endpoint \(url.origin): \(error.reason)",
                            timedOut: error.isTimeoutAfterConnect
                        )
                    )
                }
            }
        }
    }

    /// A refusal with the remedy that fits this grant and its error.
    private func remedied(_ outcome: TokenFetchOutcome) -> TokenFetchOutcome {
        guard case .permanent(let failure) = outcome, let code = failure.rejectionCode else { return outcome }
        let remedy = RejectionRemedy(grant: self.builder.grant, code: code, refreshTokenFile: self.store?.path)
        return .permanent(failure.remedied(by: remedy))
    }
}

/// What a refresh does with its outcome: off the event loops (writing the file and unlocking may
/// block), store the rotated refresh token and release the file lock, then pass the outcome on.
func endingRefresh(
    _ lease: RefreshTokenStore.Lease?,
    in store: RefreshTokenStore?,
    pool: BlockingWorkPool,
    logger: Logger,
    then completion: @escaping @Sendable (TokenFetchOutcome) -> Void
) -> @Sendable (TokenFetchOutcome) -> Void {
    { outcome in
        pool.execute {
            if let lease {
                var rotated: Secret<String>?
                if case .token(let token) = outcome { rotated = token.refreshToken }
                store?.endRefresh(lease, rotated: rotated, logger: logger)
            }
            completion(outcome)
        }
    }
}

/// `token_command`: a program whose stdout is the access token or an OAuth2 JSON token response.
/// Runs on the blocking-work pool, never on an event loop; bounded by refresh_timeout, after which the
/// command and every process it started are killed, so a hanging command never holds the session.
package final class CommandTokenSource: TokenSource {
    let argv: [String]
    let timeout: Duration
    /// Where the command runs and is waited for.
    let pool: BlockingWorkPool

    package init(argv: [String], timeout: Duration, pool: BlockingWorkPool = .shared) {
        self.argv = argv
        self.timeout = timeout
        self.pool = pool
    }

    package var canRetryWithoutNewCredentials: Bool { true }
    package var logDescription: String { self.argv.first ?? "" }

    package func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
        self.pool.execute {
            // A command has no DPoP key to prove a bound token with.
            completion(self.run().requiringProof(canProve: false))
        }
    }

    private func run() -> TokenFetchOutcome {
        let program = self.argv[0]
        switch TokenCommandProcess.run(self.argv, deadline: Instant.now() + self.timeout) {
        case .cannotStart(let reason):
            return .permanent(.commandFailed(reason: "cannot run \(program): \(reason)"))
        case .timedOut:
            return .transient(
                reason: "token_command did not finish within refresh_timeout (it was killed)",
                timedOut: true
            )
        case .killed(let signal, let stderr):
            return .permanent(.commandFailed(reason: "\(program) was killed by signal \(signal)" + Self.detail(stderr)))
        case .exited(let status, let stdout, let stderr):
            guard status == 0 else {
                return .permanent(
                    .commandFailed(reason: "\(program) exited with status \(status)" + Self.detail(stderr))
                )
            }
            return Self.interpret(stdout: stdout, stderr: stderr, program: program)
        }
    }

    private static func interpret(stdout: [UInt8], stderr: [UInt8], program: String) -> TokenFetchOutcome {
        let output = String(decoding: stdout, as: UTF8.self).trimmingWhitespace()
        guard !output.isEmpty else {
            return .permanent(.commandFailed(reason: "\(program) printed no token" + Self.detail(stderr)))
        }
        if output.hasPrefix("{") {
            guard let token = TokenEndpointResponse.parseTokenJSON(Array(output.utf8)) else {
                return .permanent(.commandFailed(reason: "\(program) printed JSON without a usable access_token"))
            }
            return .token(token)
        }
        guard !output.contains(where: { $0.isWhitespace }) else {
            return .permanent(
                .commandFailed(reason: "\(program) printed more than one word (expected the token alone, or JSON)")
            )
        }
        return .token(FetchedToken(accessToken: Secret(output)))
    }

    /// `: <stderr>` when the command said something there.
    private static func detail(_ stderr: [UInt8]) -> String {
        let text = String(decoding: stderr, as: UTF8.self).trimmingWhitespace()
        return text.isEmpty ? "" : ": \(text)"
    }
}
