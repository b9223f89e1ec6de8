import BearerCore
import BearerIO
import Dispatch
import Foundation

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
final class OAuth2TokenSource: TokenSource {
    let builder: TokenRequestBuilder
    let store: RefreshTokenStore?
    let client: EndpointCaller
    let logger: Logger

    init(
        configuration: Configuration,
        url: UpstreamURL,
        store: RefreshTokenStore?,
        client: EndpointCaller,
        logger: Logger
    ) {
        self.builder = TokenRequestBuilder(configuration: configuration, url: url)
        self.store = configuration.effectiveGrantType == .refreshToken ? store : nil
        self.client = client
        self.logger = logger
    }

    var canRetryWithoutNewCredentials: Bool { self.builder.grant != .refreshToken }
    var logDescription: String { self.builder.url.description }

    func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
        // Taking the file lock can block (another process refreshing): never on an event loop.
        BlockingWorkPool.shared.execute {
            let lease = self.store?.beginRefresh()
            let finish = endingRefresh(lease, in: self.store, logger: self.logger, then: completion)
            if self.builder.grant == .refreshToken && lease?.token == nil {
                finish(.permanent(.noRefreshToken(file: self.store?.path)))
                return
            }
            let url = self.builder.url
            self.client.send(self.builder.request(refreshToken: lease?.token)) { result in
                switch result {
                case .success(let response):
                    finish(TokenEndpointResponse.interpret(response))
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

}

/// What a refresh does with its outcome: off the event loops (writing the file and unlocking may
/// block), store the rotated refresh token and release the file lock, then pass the outcome on.
func endingRefresh(
    _ lease: RefreshTokenStore.Lease?,
    in store: RefreshTokenStore?,
    logger: Logger,
    then completion: @escaping @Sendable (TokenFetchOutcome) -> Void
) -> @Sendable (TokenFetchOutcome) -> Void {
    { outcome in
        BlockingWorkPool.shared.execute {
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
/// Runs on Dispatch's pool, never on an event loop; bounded by refresh_timeout.
final class CommandTokenSource: TokenSource {
    let argv: [String]
    let timeout: Duration

    init(argv: [String], timeout: Duration) {
        self.argv = argv
        self.timeout = timeout
    }

    var canRetryWithoutNewCredentials: Bool { true }
    var logDescription: String { self.argv.first ?? "" }

    func fetch(_ completion: @escaping @Sendable (TokenFetchOutcome) -> Void) {
        BlockingWorkPool.shared.execute {
            completion(self.run())
        }
    }

    private func run() -> TokenFetchOutcome {
        let process = Process()
        let program = self.argv[0]
        if program.contains("/") {
            process.executableURL = URL(fileURLWithPath: program)
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        }
        process.arguments = program.contains("/") ? Array(self.argv.dropFirst()) : self.argv
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return .permanent(.commandFailed(reason: "cannot run \(program): \(error.localizedDescription)"))
        }
        let group = DispatchGroup()
        final class Collected: @unchecked Sendable { var stdout = Data(); var stderr = Data() }
        let collected = Collected()
        group.enter()
        BlockingWorkPool.shared.execute {
            collected.stderr = stderr.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        collected.stdout = stdout.fileHandleForReading.readDataToEndOfFile()
        let pid = process.processIdentifier
        let timedOut = group.wait(timeout: .now() + .nanoseconds(Int(self.timeout.nanoseconds))) == .timedOut
        if timedOut { kill(pid, SIGKILL) }
        process.waitUntilExit()
        if timedOut {
            return .transient(reason: "token_command did not finish within refresh_timeout", timedOut: true)
        }
        let errorText = String(decoding: collected.stderr, as: UTF8.self).trimmingWhitespace()
        let output = String(decoding: collected.stdout, as: UTF8.self).trimmingWhitespace()
        guard process.terminationStatus == 0 else {
            let status =
                process.terminationReason == .uncaughtSignal
                ? "was killed by signal \(process.terminationStatus)"
                : "exited with status \(process.terminationStatus)"
            return .permanent(
                .commandFailed(reason: "\(program) \(status)" + (errorText.isEmpty ? "" : ": \(errorText)"))
            )
        }
        guard !output.isEmpty else {
            return .permanent(
                .commandFailed(reason: "\(program) printed no token" + (errorText.isEmpty ? "" : ": \(errorText)"))
            )
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
}
