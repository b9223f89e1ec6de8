import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// The built binary in front of a mock API, with a JSON backend (the mock token server's JSON
/// endpoints) issuing the tokens; its addresses read from its log.
final class JSONBackendProxy {
    let authority = MockTokenAuthority()
    let server: MockTokenServer
    let upstream: MockUpstream
    var process: ProxyProcess!
    var address: SocketAddress!
    var admin: SocketAddress!
    let tokenFile: String
    static let password = #"json-e2e-pass"word\secret"#

    init(shape: (inout MockTokenServer.Settings) -> Void = { _ in }) throws {
        var settings = MockTokenServer.Settings()
        settings.users = ["alice": Self.password]
        settings.rotatesRefreshTokens = true
        shape(&settings)
        self.server = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
        try self.server.start()
        self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority)
        try self.upstream.start()
        self.tokenFile = temporaryDirectory() + "/refresh_token"
    }

    deinit {
        self.upstream.stop()
        self.server.stop()
    }

    /// The config file: a JSON backend at the mock, plus `extra` lines.
    func config(_ extra: String) -> String {
        temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(self.upstream.baseURL)
            token_format = json
            token_url = \(self.server.jsonRefreshURL)
            refresh_token_file = \(self.tokenFile)
            client_idle_timeout = 10m
            log_level = debug
            \(extra)
            """
        )
    }

    func start(_ extra: String, environment: [String: String] = [:]) throws {
        self.process = try ProxyProcess(["--config", self.config(extra)], environment: environment)
        let listening = try #require(self.process.waitUntilListening())
        guard case .hostPort(_, let port) = try ListenAddressSpec.parse(listening) else { throw ProxyFailure() }
        self.address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        let adminText = try #require(word(startingWith: "admin=", in: self.process.standardError)?.dropFirst(6))
        let adminPort = try #require(Int(adminText.split(separator: ":").last ?? ""))
        self.admin = SocketAddress(ipAddress: "127.0.0.1", port: adminPort)!
    }

    struct ProxyFailure: Error {}

    /// Config lines that let the proxy log in as alice, the password from the environment.
    var loginLines: String {
        "login_url = \(self.server.jsonLoginURL)\nusername = alice\npassword = ${E2E_JSON_PASSWORD}"
    }
    static let passwordEnvironment = ["E2E_JSON_PASSWORD": JSONBackendProxy.password]

    func get(_ path: String) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.address, "GET \(path) HTTP/1.1\r\nHost: \(self.address!)\r\n\r\n")
    }

    func status() throws -> (text: String, json: [String: Any]) {
        let text = try httpRequest(self.admin, "GET /status HTTP/1.1\r\nHost: \(self.admin!)\r\n\r\n").text
        return (text, (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:])
    }

    func stop() {
        self.process.signal(SIGTERM)
        #expect(self.process.waitForExit() == 0)
    }

    /// Every token and secret in play: none may reach the proxy's output.
    var secrets: [String] {
        [Self.password] + self.server.issuedRefreshTokenList
            + (1...max(self.authority.issuedCount, 1)).map { "\(self.authority.prefix)\($0)" }
    }

    func expectNoSecrets(in texts: [(String, String)], sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, text) in texts {
            let words = Set(text.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" }).map(String.init))
            for secret in self.secrets {
                #expect(
                    !words.contains(secret) && !text.contains(Self.password),
                    "\(secret) appears in \(name)",
                    sourceLocation: sourceLocation
                )
            }
        }
    }
}

@Suite struct JSONBackendBinaryTests {
    @Test(arguments: MockTokenServer.JSONShape.Casing.allCases, [false, true])
    func refreshesInEachCasingAndEnvelope(casing: MockTokenServer.JSONShape.Casing, isEnveloped: Bool) throws {
        let proxy = try JSONBackendProxy {
            $0.json.casing = casing
            $0.json.isEnveloped = isEnveloped
            $0.refreshTokens = ["rt-first-secret"]
            $0.expiresIn = 3600
        }
        try "rt-first-secret\n".write(toFile: proxy.tokenFile, atomically: true, encoding: .utf8)
        let body =
            casing == .camel ? #"{"refreshToken": "{{refresh_token}}"}"# : #"{"refresh_token": "{{refresh_token}}"}"#
        try proxy.start("access_token = stale-access-token\ntoken_body = \(body)")
        let response = try proxy.get("/items")
        #expect(response.status == 200)
        #expect(
            proxy.upstream.requests.map { $0.header("authorization") } == [
                "Bearer stale-access-token", "Bearer mock-access-1",
            ]
        )
        let call = try #require(proxy.server.recordedCalls.first)
        #expect(call.path == "/api/auth/refresh")
        #expect(call.contentType == "application/json")
        #expect(call.form == [casing == .camel ? "refreshToken" : "refresh_token": "rt-first-secret"])
        // The rotated refresh token replaced the file, mode 0600.
        let rotated = try #require(proxy.server.issuedRefreshTokenList.first)
        #expect(waitUntil { (try? String(contentsOfFile: proxy.tokenFile, encoding: .utf8)) == rotated + "\n" })
        #expect(fileMode(proxy.tokenFile) == 0o600)
        let expiresIn = try proxy.status().json["token_expires_in_s"] as? Double ?? 0
        #expect(expiresIn > 3000 && expiresIn <= 3600)
        proxy.stop()
        proxy.expectNoSecrets(in: [("stderr", proxy.process.standardError)])
        #expect(!proxy.process.standardError.contains("rt-first-secret"))
    }

    @Test func aRefusedRefreshTokenParksTwoHundredRequestsBehindOneLogin() throws {
        // The stored refresh token is no longer valid: the backend answers "invalid refresh token".
        let proxy = try JSONBackendProxy()
        try "rt-revoked-secret\n".write(toFile: proxy.tokenFile, atomically: true, encoding: .utf8)
        try proxy.start(
            "access_token = stale-access-token\nrefresh_timeout = 60s\n\(proxy.loginLines)",
            environment: JSONBackendProxy.passwordEnvironment
        )
        let clients = try (0..<200).map { _ in try BlockingHTTPClient(connectingTo: proxy.address) }
        for (index, client) in clients.enumerated() {
            client.send("GET /parked/\(index) HTTP/1.1\r\nHost: \(proxy.address!)\r\n\r\n")
        }
        var statuses: [Int: Int] = [:]
        for client in clients { statuses[try client.readResponse().status, default: 0] += 1 }
        #expect(statuses == [200: 200], "clients saw \(statuses)")
        #expect(proxy.server.refreshCallCount == 1, "the refused refresh token was spent once")
        #expect(proxy.server.loginCallCount == 1, "one login served every parked request")
        let login = try #require(proxy.server.recordedCalls.last)
        #expect(login.form == ["username": "alice", "password": JSONBackendProxy.password])
        // The login's refresh token is stored like a rotated one.
        let stored = try #require(proxy.server.issuedRefreshTokenList.first)
        #expect(stored.hasPrefix("rt-login-"))
        #expect(try String(contentsOfFile: proxy.tokenFile, encoding: .utf8) == stored + "\n")
        #expect(proxy.process.standardError.contains("refresh token refused; logging in"))

        // The password is in no log line, not in /status, not in --check.
        let status = try proxy.status()
        #expect(status.json["state"] as? String == "ready")
        let check = try ProxyProcess.run(
            ["--check", "--config", proxy.config(proxy.loginLines)],
            environment: JSONBackendProxy.passwordEnvironment
        )
        #expect(check.status == 0)
        #expect(check.stdout.contains("password = <redacted>\n"))
        #expect(check.stdout.contains(#"login_body = {"username": "{{username}}", "password": "{{password}}"}"#))
        proxy.stop()
        proxy.expectNoSecrets(in: [
            ("stderr", proxy.process.standardError), ("/status", status.text), ("--check", check.stdout + check.stderr),
        ])
        #expect(!proxy.process.standardError.contains("rt-revoked-secret"))
    }

    @Test func whenTheLoginIsRefusedTooItsMessageIsNamed() throws {
        let proxy = try JSONBackendProxy()
        try "rt-revoked-secret\n".write(toFile: proxy.tokenFile, atomically: true, encoding: .utf8)
        try proxy.start(
            """
            access_token = stale-access-token
            login_url = \(proxy.server.jsonLoginURL)
            username = alice
            password = wrong-password-secret
            """
        )
        let response = try proxy.get("/x")
        #expect(response.status == 401)
        #expect(
            response.text.hasPrefix(
                "bearer-proxy: login failed: the login endpoint answered http_401 (invalid username or password);"
            )
        )
        #expect(proxy.server.loginCallCount == 1)
        proxy.stop()
        #expect(!proxy.process.standardError.contains("wrong-password-secret"))
    }

    @Test func readsTokensAtTheConfiguredFieldPaths() throws {
        let proxy = try JSONBackendProxy {
            $0.json.usesCustomFields = true
            $0.json.expiry = .epochSeconds
            $0.expiresIn = 1800
        }
        try proxy.start(
            """
            \(proxy.loginLines)
            token_field = result.auth.jwt
            refresh_token_field = result.auth.renew
            expires_field = result.auth.validUntil
            """,
            environment: JSONBackendProxy.passwordEnvironment
        )
        #expect(waitUntil { (try? proxy.status().json["state"] as? String) == "ready" })
        #expect(try proxy.get("/x").status == 200)
        #expect(proxy.upstream.requests.last?.header("authorization") == "Bearer mock-access-1")
        let expiresIn = try proxy.status().json["token_expires_in_s"] as? Double ?? 0
        #expect(expiresIn > 1700 && expiresIn <= 1800)
        #expect(
            waitUntil {
                (try? String(contentsOfFile: proxy.tokenFile, encoding: .utf8))?.hasPrefix("rt-login-") == true
            }
        )
        proxy.stop()
    }

    enum ExpirySource: String, CaseIterable, Sendable {
        case expiresIn, expiresAtEpoch, expiresAtRFC3339, jwt
    }

    @Test(arguments: ExpirySource.allCases)
    func takesTheExpiryFrom(_ source: ExpirySource) throws {
        let proxy = try JSONBackendProxy {
            switch source {
            case .expiresIn: $0.json.expiry = .lifetime
            case .expiresAtEpoch: $0.json.expiry = .epochSeconds
            case .expiresAtRFC3339: $0.json.expiry = .rfc3339
            case .jwt: break
            }
            if source == .jwt { $0.jwtLifetime = 2400 } else { $0.expiresIn = 2400 }
        }
        try proxy.start(
            proxy.loginLines,
            environment: JSONBackendProxy.passwordEnvironment
        )
        #expect(waitUntil { (try? proxy.status().json["state"] as? String) == "ready" })
        let expiresIn = try proxy.status().json["token_expires_in_s"] as? Double ?? 0
        #expect(expiresIn > 2300 && expiresIn <= 2400, "\(source): expires in \(expiresIn)s")
        proxy.stop()
    }
}

@Suite struct JSONDemoTests {
    @Test func demoJSONServesWhoamiThroughALoginAndKeepsTheDemoPasswordOutOfTheLog() throws {
        let proxy = try ProxyProcess(["--demo", "json", "--listen", "127.0.0.1:0"])
        let listening = try #require(proxy.waitUntilListening())
        guard case .hostPort(_, let port) = try ListenAddressSpec.parse(listening) else {
            throw JSONBackendProxy.ProxyFailure()
        }
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        let response = try httpRequest(address, "GET /whoami HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.text.contains("token generation 1"))
        #expect(proxy.standardError.contains("tokens=\"json backend: refresh at http://127.0.0.1:"))
        // The refresh's log line, and the banner (what to try, written by the main thread once the
        // server listens, apart from the log), read once the proxy stopped and its stderr is whole.
        #expect(proxy.stop() == 0)
        #expect(proxy.standardError.contains("token refreshed generation=1 trigger=startup"))
        #expect(proxy.standardError.contains("POST /api/auth/login"), "the demo's banner")
        for secret in ["demo-password", "mock-access-1", "rt-login-"] {
            #expect(!proxy.standardError.contains(secret), "\(secret) reached the log")
        }
    }

    @Test func anUnknownDemoBackendIsRefused() throws {
        let result = try ProxyProcess.run(["--demo", "xml"])
        #expect(result.status == 1)
        #expect(
            result.stderr.hasPrefix(
                "Error: Unknown demo variant 'xml': the only one is json (--demo json: a JSON login backend); plain --demo runs OAuth2\n"
            )
        )
    }
}
