import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

@Suite struct AdminTests {
    func adminRequest(
        _ fixture: SessionFixture,
        _ method: String,
        _ path: String,
        headers: String = ""
    ) throws -> BlockingHTTPClient.Response {
        let address = try #require(fixture.proxy.adminAddress)
        return try httpRequest(
            address,
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(address.port!)\r\n\(headers)Content-Length: 0\r\n\r\n"
        )
    }

    func fixture(
        _ configure: @escaping (inout Configuration, MockTokenServer) -> Void = { _, _ in }
    ) throws -> SessionFixture {
        try SessionFixture { config, server in
            config.adminListen = .hostPort(host: "127.0.0.1", port: 0)
            configure(&config, server)
        }
    }

    @Test func healthzAnswersOK() throws {
        let fixture = try self.fixture()
        let response = try self.adminRequest(fixture, "GET", "/healthz")
        #expect(response.status == 200)
        #expect(response.text == "ok\n")
    }

    @Test func metricsCountRequestsRefreshesAndReplays() throws {
        let fixture = try self.fixture { config, _ in config.accessToken = Secret("stale-admin-token") }
        #expect(try fixture.get("/a").status == 200)
        #expect(try fixture.get("/b").status == 200)
        _ = try? fixture.send(raw: "GET /c HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        let response = try self.adminRequest(fixture, "GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = response.text
        #expect(text.contains("bearer_proxy_requests_total{class=\"2xx\",protocol=\"http/1.1\"} 2\n"))
        #expect(text.contains("bearer_proxy_requests_total{class=\"4xx\",protocol=\"http/1.1\"} 1\n"))
        #expect(text.contains("bearer_proxy_token_refreshes_total{result=\"ok\"} 1\n"))
        #expect(text.contains("bearer_proxy_replays_total 1\n"))
        #expect(text.contains("bearer_proxy_upstream_401s_total 1\n"))
        #expect(text.contains("bearer_proxy_request_duration_seconds_count 3\n"))
        #expect(text.contains("bearer_proxy_token_refresh_duration_seconds_count 1\n"))
        #expect(text.contains("bearer_proxy_parked_requests 0\n"))
        #expect(text.contains("bearer_proxy_token_generation 2\n"))
        #expect(text.contains("# TYPE bearer_proxy_open_connections gauge\n"))
        #expect(text.contains("bearer_proxy_upstream_pool_idle_connections "))
        // The proxy's loops turned for those requests: their turns are counted.
        let turns = text.split(separator: "\n").first { $0.hasPrefix("bearer_proxy_loop_turn_seconds_count ") }
        #expect((turns.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0) > 0)
        #expect(text.contains("bearer_proxy_loop_turn_seconds_bucket{le=\"+Inf\"} "))
        #expect(!text.contains("stale-admin-token") && !text.contains("mock-access"))
    }

    @Test func statusShowsTheSessionButNeverAToken() throws {
        let fixture = try self.fixture { _, server in server.update { $0.expiresIn = 300 } }
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { (try? self.adminRequest(fixture, "GET", "/status").text.contains("\"ready\"")) == true })
        let response = try self.adminRequest(fixture, "GET", "/status")
        #expect(response.status == 200)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["state"] as? String == "ready")
        #expect(object["token_generation"] as? Int == 1)
        let expiresIn = try #require(object["token_expires_in_s"] as? Double)
        #expect(expiresIn > 200 && expiresIn <= 300)
        #expect((object["last_refresh"] as? [String: Any])?["outcome"] as? String == "ok")
        #expect(!response.text.contains("mock-access") && !response.text.contains(SessionFixture.clientSecret))
    }

    @Test func postRefreshForcesARefreshAndReportsIt() throws {
        let fixture = try self.fixture()
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { !(fixture.proxy.runtime.session.status.state == "refreshing") })
        let response = try self.adminRequest(fixture, "POST", "/refresh")
        #expect(response.status == 200)
        #expect(response.text.contains("\"token_generation\":2"))
        #expect(fixture.tokenServer.callCount == 2)
        #expect(try self.adminRequest(fixture, "GET", "/refresh").status == 405)
    }

    /// Without a token source there is nothing to refresh with: a 409 whose status line and body say so.
    @Test func postRefreshWithNothingToRefreshWithIs409Conflict() throws {
        let fixture = try self.fixture { config, _ in
            config.tokenURL = nil
            config.accessToken = Secret("static-token")
        }
        let response = try self.adminRequest(fixture, "POST", "/refresh")
        #expect(response.status == 409)
        #expect(String(decoding: response.head.bytes[response.head.reason], as: UTF8.self) == "Conflict")
        #expect(response.text == "bearer-proxy: there is nothing to refresh with (set token_url or token_command)\n")
    }

    @Test(arguments: [
        ("GET", "/refresh", "POST"), ("GET", "/logout", "POST"), ("POST", "/status", "GET"),
        ("POST", "/metrics", "GET"), ("DELETE", "/healthz", "GET, HEAD"),
    ])
    func aWrongMethodIs405NamingTheAllowedOnes(method: String, path: String, allowed: String) throws {
        let fixture = try self.fixture()
        let response = try self.adminRequest(fixture, method, path)
        #expect(response.status == 405)
        #expect(response.header("allow") == allowed)
        #expect(response.text == "bearer-proxy: \(method) is not allowed on \(path) (use \(allowed))\n")
    }

    @Test(arguments: TokenFlavour.allCases)
    func postLogoutDropsTokensRevokesAndRefreshLogsBackIn(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(flavour: flavour, tokenSettings: { $0.refreshTokens = ["rt-logout-secret"] }) {
            config,
            server in
            config.adminListen = .hostPort(host: "127.0.0.1", port: 0)
            config.grantType = .refreshToken
            config.refreshToken = Secret("rt-logout-secret")
            config.revocationURL = try? HTTPURL.parse(server.revocationURL).get()
        }
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { (try? fixture.get("/before").status) == 200 })
        let logout = try self.adminRequest(fixture, "POST", "/logout")
        #expect(logout.status == 200)
        #expect(logout.text.contains("\"revoked\":true"))
        #expect(fixture.tokenServer.revokedTokens == ["rt-logout-secret"])
        let after = try fixture.get("/after")
        #expect(after.status == 401)
        #expect(after.text.contains("logged out"))
        fixture.expectNoSecretsInLogs(["rt-logout-secret"])
    }

    /// One meaning of "generation": the number of tokens the proxy has put in use. The mock API names
    /// the token it got by the number the token server gave it, so the two must agree, logout or not.
    @Test func statusAndTheUpstreamAgreeOnTheGenerationAfterLogoutAndRefresh() throws {
        let fixture = try self.fixture()
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { fixture.proxy.runtime.session.status.state == "ready" })
        #expect(try self.adminRequest(fixture, "POST", "/logout").status == 200)
        let refresh = try self.adminRequest(fixture, "POST", "/refresh")
        #expect(refresh.text.contains("\"token_generation\":2"))
        let whoami = try fixture.get("/whoami")
        #expect(whoami.text.contains("token generation 2."))
        let status = try self.adminRequest(fixture, "GET", "/status")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])
        #expect(object["token_generation"] as? Int == 2)
        #expect(fixture.authority.issuedCount == 2)
        let metrics = try self.adminRequest(fixture, "GET", "/metrics")
        #expect(metrics.text.contains("bearer_proxy_token_generation 2\n"))
    }

    @Test func theAdminPortFollowsTheHostAndOriginRules() throws {
        let fixture = try self.fixture()
        let address = try #require(fixture.proxy.adminAddress)
        let rebinding = try httpRequest(
            address,
            "POST /logout HTTP/1.1\r\nHost: attacker.example:\(address.port!)\r\nContent-Length: 0\r\n\r\n"
        )
        #expect(rebinding.status == 403)
        let crossSite = try self.adminRequest(fixture, "POST", "/logout", headers: "Origin: https://evil.example\r\n")
        #expect(crossSite.status == 403)
        #expect(try self.adminRequest(fixture, "GET", "/other").status == 404)
        #expect(fixture.proxy.runtime.session.status.state != "logged_out")
    }

    @Test func writesOneAccessLogLinePerRequest() throws {
        let path = try ScratchSpace.newPath("access.log")
        defer { unlink(path) }
        let fixture = try SessionFixture { config, _ in
            config.accessLog = .file(path)
            config.accessToken = Secret("stale-access-log-token")
        }
        #expect(try fixture.get("/items?page=2").status == 200)
        #expect(try fixture.send(raw: "GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n").status == 403)
        // Lines are written in batches at the end of the loop's turn: all are there once it stopped.
        let lines = fixture.stopAndReadAccessLog(path)
        #expect(lines.count == 2)
        #expect(
            lines[0].contains(
                " method=GET host=127.0.0.1:\(fixture.upstream.port) path=\"/items?page=2\" status=200 bytes="
            )
        )
        // The shape of every other line of the log: time, level, constant message, metadata.
        #expect(lines.allSatisfy { $0.range(of: #"^\S+Z info request method="#, options: .regularExpression) != nil })
        #expect(lines[0].hasSuffix("replayed=yes protocol=http/1.1"))
        #expect(lines[1].contains("status=403"))
        #expect(lines[1].hasSuffix("replayed=no protocol=http/1.1"))
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(!lines.joined().contains("stale-access-log-token"))
    }

    @Test func accessLogValuesAreQuotedEscapedAndCut() throws {
        let path = try ScratchSpace.newPath("access.log")
        defer { unlink(path) }
        let fixture = try SessionFixture { config, _ in config.accessLog = .file(path) }
        _ = try fixture.get("/a\"b\\c")
        _ = try fixture.get("/" + String(repeating: "x", count: 600))
        let written = fixture.stopAndReadAccessLog(path)
        #expect(written.count == 2)
        #expect(written.first?.contains(#" path="/a\"b\\c" "#) == true)
        #expect(written.last?.contains(" path=\"/" + String(repeating: "x", count: 511) + "…\" ") == true)
        #expect(
            written.allSatisfy {
                $0.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "#, options: .regularExpression) != nil
            }
        )
        #expect(written.allSatisfy { $0.range(of: #" duration_ms=\d+\.\d\d "#, options: .regularExpression) != nil })
    }

    @Test func logsTheEffectiveSettingsAtStartWithoutSecrets() throws {
        let fixture = try self.fixture()
        let start = try #require(fixture.logs.capturedLines.first { $0.contains(" info starting ") })
        #expect(start.contains("tokens=\"client_credentials at http://127.0.0.1:"))
        #expect(start.contains("admin=127.0.0.1:"))
        #expect(!start.contains(SessionFixture.clientSecret))
    }
}

extension SessionFixture {
    func send(raw: String) throws -> BlockingHTTPClient.Response {
        try httpRequest(self.address, raw)
    }
}
