import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

/// The two ways the proxy talks to a token-issuing server; the session tests run over both.
enum TokenFlavour: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// RFC 6749 form posts to the mock's OAuth2 token endpoint.
    case form
    /// The mock's JSON login and refresh endpoints (token_format = json).
    case json

    var testDescription: String { self.rawValue }

    /// What the proxy's token requests carry.
    var contentType: String {
        switch self {
        case .form: "application/x-www-form-urlencoded"
        case .json: "application/json"
        }
    }

    /// Words the 401 body names when the server refuses an unknown refresh token.
    var refusalWords: [String] {
        switch self {
        case .form: ["invalid_grant", "Unknown refresh token"]
        case .json: ["http_401", "invalid refresh token"]
        }
    }
}

/// A proxy between a client and a mock API whose tokens come from a mock token server.
/// Every log line is captured, so tests can check that no secret ever reaches one.
///
/// Tests configure it in OAuth2 terms; the JSON flavour translates them: a refresh token grant
/// becomes a JSON refresh at token_url, a grant that needs no refresh token (client_credentials,
/// password) becomes a login with username and password at login_url, RFC 7009 revocation becomes a
/// JSON logout.
final class SessionFixture {
    let authority = MockTokenAuthority()
    let tokenServer: MockTokenServer
    let upstream: MockUpstream
    let proxy: ProxyServer
    let logs = LogSink(capturing: ())

    static let clientSecret = "cs-very-secret-123"
    static let username = "proxy-user"
    static let password = "proxy-password-secret-456"

    init(
        flavour: TokenFlavour = .form,
        tokenSettings: (inout MockTokenServer.Settings) -> Void = { _ in },
        acceptedTokens: Set<String>? = nil,
        upstreamTrustsTokenServer: Bool = true,
        tlsFactory: (any TLSConnectionFactory)? = nil,
        upstreamTLS: TLSContext? = nil,
        _ configure: (inout Configuration, MockTokenServer) -> Void
    ) throws {
        var settings = MockTokenServer.Settings()
        settings.clientID = "proxy-client"
        settings.clientSecret = Self.clientSecret
        settings.users = [Self.username: Self.password]
        tokenSettings(&settings)
        self.tokenServer = MockTokenServer(group: mockGroup, authority: self.authority, settings: settings)
        try self.tokenServer.start()
        self.upstream = MockUpstream(
            group: mockGroup,
            acceptedTokens: acceptedTokens,
            authority: upstreamTrustsTokenServer ? self.authority : nil,
            tls: upstreamTLS
        )
        try self.upstream.start()
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 0)]
        configuration.upstream = try HTTPURL.parse(self.upstream.baseURL).get()
        configuration.tokenURL = try HTTPURL.parse(self.tokenServer.url).get()
        configuration.grantType = .clientCredentials
        configuration.clientID = "proxy-client"
        configuration.clientSecret = Secret(Self.clientSecret)
        configuration.workers = 2
        // Tests name the proxy "localhost" without its port; production defaults need the port.
        configuration.acceptHosts = [.host("localhost")]
        configuration.refreshTimeout = .seconds(5)
        configure(&configuration, self.tokenServer)
        if flavour == .json { Self.translateToJSON(&configuration, self.tokenServer) }
        self.proxy = try ProxyServer.start(
            configuration: configuration,
            logger: Logger(level: .debug, sink: self.logs),
            tlsFactory: tlsFactory
        )
    }

    deinit {
        self.proxy.shutdown()
        self.upstream.stop()
        self.tokenServer.stop()
    }

    /// The JSON flavour of an OAuth2-style configuration (see the type's comment).
    static func translateToJSON(_ configuration: inout Configuration, _ server: MockTokenServer) {
        guard let tokenURL = configuration.tokenURL else { return }
        let isMock = tokenURL.description == server.url
        configuration.tokenFormat = .json
        configuration.tokenURL = isMock ? try? HTTPURL.parse(server.jsonRefreshURL).get() : tokenURL
        if configuration.effectiveGrantType != .refreshToken {
            Self.addJSONLogin(&configuration, server, at: isMock ? nil : tokenURL)
        }
        configuration.grantType = nil
        if configuration.revocationURL?.description == server.revocationURL {
            configuration.revocationURL = nil
            configuration.jsonBackend.logoutURL = try? HTTPURL.parse(server.jsonLogoutURL).get()
        }
    }

    /// Lets the proxy log in at the mock's JSON login endpoint (or `url`) with the mock's user.
    static func addJSONLogin(
        _ configuration: inout Configuration,
        _ server: MockTokenServer,
        at url: HTTPURL? = nil
    ) {
        configuration.jsonBackend.loginURL = url ?? (try? HTTPURL.parse(server.jsonLoginURL).get())
        configuration.username = Self.username
        configuration.password = Secret(Self.password)
    }

    var address: SocketAddress { self.proxy.boundAddresses[0] }

    func client() throws -> BlockingHTTPClient { try BlockingHTTPClient(connectingTo: self.address) }

    func get(_ path: String) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.address, "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
    }

    /// Waits (bounded) until the token server has decided its answer to `count` calls (the tokens
    /// they carry are issued; a delayed answer may still be on its way).
    func waitForTokenCalls(_ count: Int) -> Bool {
        waitUntil { self.tokenServer.answeredCallCount >= count }
    }

    /// Waits (bounded) until the session shows what `condition` asks (what /status shows): a refresh
    /// that ended, a failure, a generation.
    func waitForSession(_ condition: (TokenSession.Status) -> Bool) -> Bool {
        waitUntil { condition(self.proxy.runtime.session.status) }
    }

    /// Stops the proxy and returns the lines of its access log file `path`, all written: shutting down,
    /// each loop hands the lines it gathered to the log, whose writer is then flushed.
    func stopAndReadAccessLog(_ path: String) -> [Substring] {
        self.proxy.shutdown()
        self.proxy.runtime.accessLog?.flush()
        return ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
    }

    /// Fails the test if any log line holds one of `secrets` (or an issued access token).
    func expectNoSecretsInLogs(_ secrets: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = self.logs.capturedLines
        let issued =
            (0...self.authority.issuedCount).map { "\(self.authority.prefix)\($0)" }
            + self.tokenServer.issuedRefreshTokenList
        for secret in secrets + [Self.clientSecret, Self.password] + issued where !secret.isEmpty {
            // "mock-access-1" is a prefix of "mock-access-12": match whole words only.
            let leaked = lines.first { line in
                line.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" }).contains { $0 == secret }
            }
            #expect(
                leaked == nil,
                "secret \(secret) appears in a log line: \(leaked ?? "")",
                sourceLocation: sourceLocation
            )
        }
    }
}
