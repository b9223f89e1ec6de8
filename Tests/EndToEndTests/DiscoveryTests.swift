import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `issuer` instead of the endpoint keys, against Authlib (a real authorization server): the
/// binary reads the metadata, gets a token from the endpoint it names and serves the API; `--check`
/// shows what it discovered and where; each failure is one line and exit status 1.
@Suite(.requires(.pythonAuthlib)) struct DiscoveryTests {
    /// A config file with `issuer` and the client Authlib knows, and no endpoint key.
    static func config(issuer: String, upstream: String, server: AuthlibServer) -> String {
        temporaryFile(Self.configText(issuer: issuer, upstream: upstream, server: server))
    }

    static func configText(issuer: String, upstream: String, server: AuthlibServer) -> String {
        """
        upstream = \(upstream)
        issuer = \(issuer)
        client_id = \(server.clientID)
        client_secret = \(server.clientSecret)

        """
    }

    @Test func issuerAloneGetsATokenAndServesTheAPI() throws {
        let server = try AuthlibServer(mode: .rfc8414, issuerPath: "/tenant")
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let config = Self.config(issuer: server.issuer, upstream: upstream.baseURL, server: server)
        try Self.expectServes(config: config, upstream: upstream, server: server, tokensIssued: 1)
    }

    /// A proxy started on `config` answers 200 with Authlib's newest token upstream, the
    /// `tokensIssued`th it issued, and stops cleanly.
    static func expectServes(
        config: String,
        upstream: MockUpstream,
        server: AuthlibServer,
        tokensIssued: Int,
        environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let proxy = try ProxyProcess(["--config", config, "--listen", "127.0.0.1:0"], environment: environment)
        let port = try tcpPort(of: try #require(proxy.waitUntilListening(), sourceLocation: sourceLocation))
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET /items HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 200, "\(response.text)", sourceLocation: sourceLocation)
        let issued = try server.issuedTokens()
        #expect(issued.count == tokensIssued, sourceLocation: sourceLocation)
        #expect(
            upstream.requests.last?.header("authorization") == "Bearer \(issued.last ?? "-")",
            sourceLocation: sourceLocation
        )
        #expect(proxy.stop() == 0, "\(proxy.standardError)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [AuthlibServer.Mode.rfc8414, .openID])
    func checkShowsTheDiscoveredEndpointsAndTheirSource(mode: AuthlibServer.Mode) throws {
        let server = try AuthlibServer(mode: mode, issuerPath: "/tenant")
        let config = Self.config(issuer: server.issuer, upstream: "http://127.0.0.1:9", server: server)
        let result = try ProxyProcess.run(["--check", "--config", config])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let origin = "http://127.0.0.1:\(server.port)"
        let source =
            mode == .rfc8414
            ? "\(origin)/.well-known/oauth-authorization-server/tenant"
            : "\(origin)/tenant/.well-known/openid-configuration"
        for line in [
            "issuer = \(server.issuer)",
            "token_url = \(origin)/token  # discovered from \(source)",
            "revocation_url = \(origin)/revoke  # discovered from \(source)",
            "client_auth = basic  # discovered from \(source)",
            "device_authorization_url = (not set)",
        ] {
            #expect(result.stdout.contains("\n\(line)\n"), "missing \(line)")
        }
        #expect(!result.stdout.contains(server.clientSecret))
    }

    @Test func noMetadataAtEitherAddressNamesBoth() throws {
        let server = try AuthlibServer(mode: .none, issuerPath: "/tenant")
        let config = Self.config(issuer: server.issuer, upstream: "http://127.0.0.1:9", server: server)
        for arguments in [["--check", "--config", config], ["--config", config, "--listen", "127.0.0.1:0"]] {
            let result = try ProxyProcess.run(arguments)
            #expect(result.status == 1)
            let origin = "http://127.0.0.1:\(server.port)"
            #expect(
                result.stderr.hasSuffix(
                    "issuer: no authorization server metadata at \(origin)/.well-known/oauth-authorization-server/tenant (404) nor at \(origin)/tenant/.well-known/openid-configuration (404)\n"
                ),
                "\(result.stderr)"
            )
            #expect(result.stderr.filter { $0 == "\n" }.count == 1, "\(result.stderr)")
        }
    }

    @Test func anIssuerMismatchNamesBoth() throws {
        let server = try AuthlibServer(mode: .mismatch)
        let config = Self.config(issuer: server.issuer, upstream: "http://127.0.0.1:9", server: server)
        let result = try ProxyProcess.run(["--check", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(config):2: issuer: the metadata at http://127.0.0.1:\(server.port)/.well-known/oauth-authorization-server names '\(server.issuer)/other', not the configured '\(server.issuer)' (they must be equal, RFC 8414 §3.3)\n"
        )
    }

    @Test func anHTTPEndpointOnAnotherMachineIsRefused() throws {
        let server = try AuthlibServer(mode: .remoteHTTP)
        let config = Self.config(issuer: server.issuer, upstream: "http://127.0.0.1:9", server: server)
        let result = try ProxyProcess.run(["--check", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(config):2: issuer: the metadata at http://127.0.0.1:\(server.port)/.well-known/oauth-authorization-server cannot be used: token_endpoint 'http://auth.example.net/token' is http:// to another machine (only https://, or http:// on a loopback address)\n"
        )
    }

    /// SIGHUP reads the metadata again: a new issuer's token endpoint serves the next token; an issuer
    /// without metadata changes nothing and is one error line.
    @Test func sighupReadsTheMetadataAgain() throws {
        let first = try AuthlibServer(mode: .rfc8414)
        let second = try AuthlibServer(mode: .openID, issuerPath: "/next")
        let missing = try AuthlibServer(mode: .none)
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let config = Self.config(issuer: first.issuer, upstream: upstream.baseURL, server: first)
        let proxy = try ProxyProcess(["--config", config, "--listen", "127.0.0.1:0"])
        let port = try tcpPort(of: try #require(proxy.waitUntilListening()))
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        let get = "GET /items HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        #expect(try httpRequest(address, get).status == 200)
        #expect(try first.issuedTokens().count == 1)

        try Self.configText(issuer: second.issuer, upstream: upstream.baseURL, server: second)
            .write(toFile: config, atomically: true, encoding: .utf8)
        proxy.signal(SIGHUP)
        #expect(waitUntil { (try? second.issuedTokens().count) == 1 })
        // The refresh SIGHUP forced ends when the proxy has the answer, a moment after Authlib sent it.
        let secondToken = try #require(try second.issuedTokens().first)
        #expect(
            waitUntil {
                (try? httpRequest(address, get).status) == 200
                    && upstream.requests.last?.header("authorization") == "Bearer \(secondToken)"
            }
        )

        try Self.configText(issuer: missing.issuer, upstream: upstream.baseURL, server: missing)
            .write(toFile: config, atomically: true, encoding: .utf8)
        proxy.signal(SIGHUP)
        #expect(proxy.stop() == 0)
        let reloads = proxy.standardError.split(separator: "\n").filter { $0.contains(" SIGHUP: ") }
        #expect(reloads.count == 3, "\(reloads)")
        #expect(
            reloads.last?.contains(
                "error SIGHUP: the new configuration cannot be applied; the running one stays error=\"\(config):2: issuer: no authorization server metadata at"
            ) == true,
            "\(reloads)"
        )
        #expect(try second.issuedTokens().count == 1)
    }

    /// `login` reads the metadata too: with `issuer` alone it logs in at the discovered authorization
    /// endpoint (PKCE, which Authlib requires) and token endpoint, and the proxy then serves the API
    /// with a token refreshed from the stored refresh token.
    @Test func loginWithIssuerAloneThenTheProxyServes() throws {
        let server = try AuthlibServer(mode: .rfc8414)
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let tokenFile = temporaryDirectory() + "/refresh-token"
        let config = temporaryFile(
            Self.configText(issuer: server.issuer, upstream: upstream.baseURL, server: server)
                + "refresh_token_file = \(tokenFile)\n"
        )
        try Self.login(config: config, server: server)
        let stored = try String(contentsOfFile: tokenFile, encoding: .utf8)
        #expect(stored.hasPrefix("authlib-refresh-"))

        try Self.expectServes(config: config, upstream: upstream, server: server, tokensIssued: 2)
    }

    /// Runs `login` on `config`, plays the browser that approves at Authlib, and expects exit 0; the
    /// authorization URL it followed.
    @discardableResult
    static func login(
        config: String,
        server: AuthlibServer,
        environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        let login = try ProxyProcess(["login", "--config", config, "--no-browser"], environment: environment)
        let authorize = "http://127.0.0.1:\(server.port)/authorize?"
        #expect(waitUntil { login.standardOutput.contains(authorize) }, sourceLocation: sourceLocation)
        let url = try #require(word(startingWith: authorize, in: login.standardOutput), sourceLocation: sourceLocation)
        let authorization = try browse(url)
        #expect(authorization.status == 302, "\(authorization.text)", sourceLocation: sourceLocation)
        let callback = try #require(authorization.header("location"), sourceLocation: sourceLocation)
        #expect(try browse(callback).status == 200, sourceLocation: sourceLocation)
        #expect(login.waitForExit() == 0, "\(login.standardError)", sourceLocation: sourceLocation)
        return url
    }
}
