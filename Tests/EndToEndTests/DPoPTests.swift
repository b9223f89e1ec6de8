import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// A DPoP authorization server and API (RFC 9449) and the proxy between a client that cannot sign
/// and them: the token endpoint checks each proof with OpenSSL's verifier and binds the token to the
/// proof's key (token_type DPoP); the API checks every request's proof (htm, htu's scheme, host,
/// port and path, ath, the bound key, a jti never seen) before it looks at anything else.
final class DPoPServers {
    let authority = MockTokenAuthority()
    let tokenRules: MockDPoPRules
    let apiRules = MockDPoPRules()
    let token: MockTokenServer
    let api: MockUpstream
    let folder: String

    /// `tls`: the API speaks https (the test certificate for localhost).
    init(tokenNonce: String? = nil, tls: TLSContext? = nil) throws {
        self.tokenRules = MockDPoPRules(nonce: tokenNonce)
        var settings = MockTokenServer.Settings()
        settings.clientID = "dpop-client"
        settings.clientSecret = "dpop-secret"
        settings.expiresIn = 3600
        settings.dpop = self.tokenRules
        self.token = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
        try self.token.start()
        self.api = MockUpstream(group: e2eMockGroup, authority: self.authority, tls: tls, dpop: self.apiRules)
        try self.api.start()
        self.folder = (temporaryFile("", name: "unused") as NSString).deletingLastPathComponent
    }

    deinit {
        self.api.stop()
        self.token.stop()
    }

    var keyFile: String { self.folder + "/keys/dpop-key.pem" }

    func config(keyFile: String? = nil) -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(self.api.baseURL)
            \(self.sessionKeys)
            dpop_key_file = \(keyFile ?? self.keyFile)
            """
        )
    }

    /// A session's token keys, dpop on.
    var sessionKeys: String {
        """
        token_url = \(self.token.url)
        grant_type = client_credentials
        client_id = dpop-client
        client_secret = dpop-secret
        dpop = on
        """
    }

    var apiURL: String { "http://127.0.0.1:\(self.api.port)" }
}

/// A running proxy: its listener and admin addresses.
struct RunningProxy {
    let process: ProxyProcess
    let address: SocketAddress
    let admin: SocketAddress

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        self.process = try ProxyProcess(arguments, environment: environment)
        let listening = try #require(self.process.waitUntilListening(), "\(self.process.standardError)")
        self.address = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!
        let admin = try #require(word(startingWith: "admin=", in: self.process.standardError)?.dropFirst(6))
        self.admin = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: String(admin)))!
    }

    func get(_ target: String, fields: String = "") throws -> BlockingHTTPClient.Response {
        try httpRequest(self.address, "GET \(target) HTTP/1.1\r\nHost: \(self.address)\r\n\(fields)\r\n")
    }

    func adminText(_ path: String) throws -> String {
        try httpRequest(self.admin, "GET \(path) HTTP/1.1\r\nHost: \(self.admin)\r\n\r\n").text
    }

    func stop() {
        self.process.signal(SIGTERM)
        #expect(self.process.waitForExit() == 0)
    }
}

@Suite struct DPoPTests {
    /// An https_proxy client (curl) through an intercepted tunnel: the proxy terminates its TLS and
    /// the request goes on to the https API with the token and a proof whose htu is the https URL.
    @Test(.requires(.curl))
    func anInterceptedTunnelsRequestsCarryAProofForTheHTTPSTarget() throws {
        let fixtures = InterceptTunnelBinaryTests.fixtures
        let servers = try DPoPServers(tls: try InterceptTunnelBinaryTests.localhostServerTLS())
        let caDirectory = servers.folder + "/ca"
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = https://localhost:\(servers.api.port)
            ca_file = \(fixtures.appendingPathComponent("ca.pem").path)
            tls_intercept = on
            ca_dir = \(caDirectory)
            \(servers.sessionKeys)
            dpop_key_file = \(servers.keyFile)
            """
        )
        let proxy = try RunningProxy(["--config", config])
        defer { proxy.stop() }
        let url = "https://localhost:\(servers.api.port)"
        for round in 0..<2 {
            let result = try InterceptTunnelBinaryTests.run(
                [
                    InterceptTunnelBinaryTests.curl, "-sS", "--proxy", "http://\(proxy.address)", "--cacert",
                    caDirectory + "/ca.pem", "-H", "DPoP: forged-by-the-client", "-w", "\n%{http_code}",
                    "\(url)/v1/items/\(round)?page=2",
                ],
                environment: [:]
            )
            #expect(result.status == 0, "curl: \(result.standardError)")
            #expect(result.standardOutput.hasSuffix("\n200"), "\(result.standardOutput)")
        }
        #expect(servers.apiRules.failures.isEmpty, "\(servers.apiRules.failures)")
        let proofs = servers.apiRules.proofs
        #expect(proofs.map(\.htu) == ["\(url)/v1/items/0", "\(url)/v1/items/1"])
        #expect(Set(proofs.compactMap(\.jti)).count == 2)
        let sent = try #require(servers.api.requests.last)
        #expect(sent.headerValues("dpop").count == 1 && sent.header("dpop") != "forged-by-the-client")
        #expect(sent.header("authorization")?.hasPrefix("DPoP mock-access-") == true)
        #expect(servers.token.callCount == 1)
    }

    @Test func requestsCarryAFreshProofForTheirTargetWithoutItsQuery() throws {
        let servers = try DPoPServers()
        let proxy = try RunningProxy(["--config", servers.config()])
        defer { proxy.stop() }
        for round in 0..<3 {
            let response = try proxy.get("/v1/items/\(round)?page=2&q=a", fields: "DPoP: forged-by-the-client\r\n")
            #expect(response.status == 200, "\(response.text)")
        }
        #expect(servers.apiRules.failures.isEmpty, "\(servers.apiRules.failures)")
        let proofs = servers.apiRules.proofs
        #expect(proofs.map(\.htu) == (0..<3).map { "\(servers.apiURL)/v1/items/\($0)" })
        #expect(proofs.allSatisfy { $0.htm == "GET" })
        #expect(Set(proofs.compactMap(\.jti)).count == 3)
        // The client's own DPoP field is replaced, not added to.
        let sent = try #require(servers.api.requests.last)
        #expect(sent.headerValues("dpop").count == 1)
        #expect(sent.header("authorization")?.hasPrefix("DPoP mock-access-") == true)
        // The one token request carried a proof for the token URL, and the token is bound to its key.
        #expect(servers.token.callCount == 1)
        let tokenProof = try #require(servers.tokenRules.proofs.first)
        #expect(tokenProof.htm == "POST" && tokenProof.htu == servers.token.url && tokenProof.ath == nil)
        #expect(proofs.allSatisfy { $0.thumbprint == tokenProof.thumbprint })
        var status = stat()
        #expect(stat(servers.keyFile, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let metrics = try proxy.adminText("/metrics")
        #expect(metrics.contains(#"bearer_proxy_dpop_proofs_total 4"#), "\(metrics)")
        let statusPage = try proxy.adminText("/status")
        #expect(statusPage.contains(tokenProof.thumbprint))
    }

    @Test func anAPINonceChallengeIsAnsweredWithTheNonceAndCostsNoTokenCall() throws {
        let servers = try DPoPServers()
        let proxy = try RunningProxy(["--config", servers.config()])
        defer { proxy.stop() }
        #expect(try proxy.get("/first").status == 200)
        servers.apiRules.requireNonce("api-nonce-1")
        #expect(try proxy.get("/second").status == 200)
        #expect(servers.apiRules.nonceChallenges.load(ordering: .relaxed) == 1)
        #expect(servers.apiRules.proofs.last?.nonce == "api-nonce-1")
        // The nonce is remembered: the next request carries it at once.
        #expect(try proxy.get("/third").status == 200)
        #expect(servers.apiRules.nonceChallenges.load(ordering: .relaxed) == 1)
        // A rotation is one more retry, never a refresh.
        servers.apiRules.requireNonce("api-nonce-2")
        #expect(try proxy.get("/fourth").status == 200)
        #expect(servers.token.callCount == 1)
        #expect(servers.apiRules.failures.isEmpty, "\(servers.apiRules.failures)")
        // The token endpoint's nonce is its own: its proofs never carried the API's.
        #expect(servers.tokenRules.proofs.allSatisfy { $0.nonce == nil })
        let metrics = try proxy.adminText("/metrics")
        #expect(metrics.contains(#"bearer_proxy_dpop_nonce_retries_total 2"#), "\(metrics)")
        #expect(metrics.contains(#"bearer_proxy_token_refreshes_total"#))
    }

    @Test func theTokenEndpointsNonceChallengeIsRetriedOnceWithTheNonce() throws {
        let servers = try DPoPServers(tokenNonce: "as-nonce-1")
        let proxy = try RunningProxy(["--config", servers.config()])
        defer { proxy.stop() }
        #expect(try proxy.get("/x").status == 200)
        #expect(servers.token.callCount == 2)
        #expect(servers.tokenRules.nonceChallenges.load(ordering: .relaxed) == 1)
        #expect(servers.tokenRules.proofs.map(\.nonce) == ["as-nonce-1"])
        #expect(servers.tokenRules.failures.isEmpty, "\(servers.tokenRules.failures)")
    }

    @Test func theKeySurvivesARestart() throws {
        let servers = try DPoPServers()
        for _ in 0..<2 {
            let proxy = try RunningProxy(["--config", servers.config()])
            #expect(try proxy.get("/x").status == 200)
            proxy.stop()
        }
        let thumbprints = servers.tokenRules.proofs.map(\.thumbprint)
        #expect(thumbprints.count == 2 && Set(thumbprints).count == 1)
        let check = try ProxyProcess.run(["--config", servers.config(), "--check"])
        #expect(check.status == 0)
        #expect(check.stdout.contains("dpop = on"))
        #expect(check.stdout.contains("thumbprint \(thumbprints[0])"), "\(check.stdout)")
        #expect(!check.stdout.contains("PRIVATE KEY"))
    }

    @Test func aRevocationStormOf20ConcurrentRequestsCostsOneTokenCallEachRound() throws {
        let servers = try DPoPServers()
        let proxy = try RunningProxy(["--config", servers.config()])
        defer { proxy.stop() }
        #expect(try proxy.get("/warm").status == 200)
        try revocationStorm(
            through: proxy.address,
            authority: servers.authority,
            rounds: 2,
            clients: 20,
            callCount: { servers.token.callCount }
        )
        #expect(servers.apiRules.failures.isEmpty, "\(servers.apiRules.failures)")
        // Each replay proved the new token: its ath is the third token's.
        let last = try #require(servers.apiRules.proofs.last)
        #expect(last.ath == MockDPoPVerifier.accessTokenHash("mock-access-3"))
    }

    /// The DPoP key and the tokens bound to it reach no output: not the debug log with the access
    /// log on, not /status, /metrics or --check, through a storm of refreshes and replays.
    @Test func neitherTheKeyNorATokenReachesAnyOutput() throws {
        let servers = try DPoPServers()
        let lines = try String(contentsOfFile: servers.config(), encoding: .utf8)
        let config = temporaryFile(lines + "\nlog_level = debug\naccess_log = stderr\n")
        let proxy = try RunningProxy(["--config", config])
        #expect(try proxy.get("/warm").status == 200)
        try revocationStorm(
            through: proxy.address,
            authority: servers.authority,
            rounds: 2,
            clients: 10,
            callCount: { servers.token.callCount }
        )
        let status = try proxy.adminText("/status")
        let metrics = try proxy.adminText("/metrics")
        let check = try ProxyProcess.run(["--config", config, "--check"])
        proxy.stop()
        #expect(proxy.process.standardError.contains("token refreshed"), "the storm was logged")
        #expect(status.contains("thumbprint"), "the public thumbprint is shown: \(status)")
        let keyLines = try TestKeys.pemBodyLines(of: servers.keyFile)
        #expect(!keyLines.isEmpty, "the key file was made")
        let tokens = (1...servers.authority.issuedCount).map { "\(servers.authority.prefix)\($0)" }
        expectNoSecrets(
            keyLines + tokens + ["dpop-secret"],
            in: [
                ("stderr", proxy.process.standardError), ("/status", status), ("/metrics", metrics),
                ("--check", check.stdout + check.stderr),
            ]
        )
    }

    @Test func aReplayedPOSTBodyArrivesIntactWithANewProof() throws {
        let servers = try DPoPServers()
        let proxy = try RunningProxy(["--config", servers.config()])
        defer { proxy.stop() }
        #expect(try proxy.get("/warm").status == 200)
        servers.authority.revokeAll()
        let body = String(repeating: "dpop body ", count: 500)
        let response = try httpRequest(
            proxy.address,
            "POST /echo?x=1 HTTP/1.1\r\nHost: \(proxy.address)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        #expect(response.status == 200)
        #expect(response.text == body)
        #expect(servers.token.callCount == 2)
        let last = try #require(servers.apiRules.proofs.last)
        #expect(last.htm == "POST" && last.htu == "\(servers.apiURL)/echo")
        #expect(last.ath == MockDPoPVerifier.accessTokenHash("mock-access-2"))
    }

    @Test func twoSessionsGetTwoKeysInTheDefaultFolder() throws {
        let servers = try DPoPServers()
        let second = MockUpstream(group: e2eMockGroup, authority: servers.authority, dpop: servers.apiRules)
        try second.start()
        defer { second.stop() }
        let data = servers.folder + "/data"
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(servers.api.baseURL)
            \(servers.sessionKeys)

            [session other]
            mount = /other
            upstream = \(second.baseURL)
            \(servers.sessionKeys)
            """
        )
        let proxy = try RunningProxy(["--config", config], environment: ["XDG_DATA_HOME": data])
        defer { proxy.stop() }
        #expect(try proxy.get("/a").status == 200)
        #expect(try proxy.get("/other/b").status == 200)
        #expect(servers.apiRules.failures.isEmpty, "\(servers.apiRules.failures)")
        #expect(FileManager.default.fileExists(atPath: data + "/bearer-proxy/dpop-key.pem"))
        #expect(FileManager.default.fileExists(atPath: data + "/bearer-proxy/dpop-key-other.pem"))
        #expect(Set(servers.tokenRules.proofs.map(\.thumbprint)).count == 2)
        #expect(Set(servers.apiRules.proofs.map(\.thumbprint)).count == 2)
    }

    @Test func aKeyFileOthersCanReadStopsTheProxyWithOneLineNamingIt() throws {
        let servers = try DPoPServers()
        let key = servers.folder + "/open-key.pem"
        // The proxy's start makes the key (a check leaves no file behind).
        try RunningProxy(["--config", servers.config(keyFile: key)]).stop()
        chmod(key, 0o644)
        let run = try ProxyProcess.run(["--config", servers.config(keyFile: key)])
        #expect(run.status == 1)
        #expect(run.stderr.contains("\(key): mode 644 is wider than 0600"), "\(run.stderr)")
    }
}
