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

@Suite struct SessionTests {
    @Test(arguments: TokenFlavour.allCases)
    func refreshesOnceOn401AndReplaysWithTheNewToken(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(flavour: flavour) { config, _ in config.accessToken = Secret("stale-token-1") }
        let response = try fixture.get("/v1/items")
        #expect(response.status == 200)
        #expect(fixture.tokenServer.callCount == 1)
        let seen = fixture.upstream.requests.map { $0.header("authorization") ?? "" }
        #expect(seen == ["Bearer stale-token-1", "Bearer mock-access-1"])
        #expect(fixture.tokenServer.recordedCalls.map(\.contentType) == [flavour.contentType])
        #expect(try fixture.get("/v1/again").status == 200)
        #expect(fixture.tokenServer.callCount == 1)
        fixture.expectNoSecretsInLogs(["stale-token-1"])
    }

    @Test(arguments: TokenFlavour.allCases)
    func fetchesATokenAtStartWhenItHasNone(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(flavour: flavour) { _, _ in }
        // Before any request: the start-up refresh ended with the first token (the line it logs, trigger=startup,
        // is TokenSessionTests').
        #expect(fixture.waitForSession { $0.generation == 1 && $0.lastRefreshOutcome == "ok" })
        #expect(try fixture.get("/x").status == 200)
        #expect(fixture.tokenServer.callCount == 1)
        #expect(fixture.upstream.rejected.load(ordering: .relaxed) == 0)
    }

    @Test(arguments: TokenFlavour.allCases)
    func oneRefreshForTwoHundredConcurrentClientsWhenEveryTokenIsRevoked(flavour: TokenFlavour) throws {
        // Generous timeouts: under a sanitizer the warm-up alone can outlast the default idle timeout.
        let fixture = try SessionFixture(flavour: flavour) { config, _ in
            config.clientIdleTimeout = .seconds(600)
            config.refreshTimeout = .seconds(60)
        }
        #expect(fixture.waitForTokenCalls(1))
        let clients = try (0..<200).map { _ in try fixture.client() }
        for client in clients { client.send("GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n") }
        for client in clients { #expect(try client.readResponse().status == 200) }
        #expect(fixture.tokenServer.callCount == 1)

        fixture.authority.revokeAll()
        for (index, client) in clients.enumerated() {
            client.send("GET /storm/\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        }
        var statuses: [Int: Int] = [:]
        for client in clients { statuses[try client.readResponse().status, default: 0] += 1 }
        #expect(statuses == [200: 200], "clients saw \(statuses)")
        #expect(fixture.tokenServer.callCount == 2, "exactly one refresh for the storm")
        fixture.expectNoSecretsInLogs()
    }

    @Test func replaysA100KBBodyByteForByte() throws {
        let fixture = try SessionFixture { config, _ in config.accessToken = Secret("stale") }
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
        let client = try fixture.client()
        client.send(
            Array("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        )
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.body == body)
        let bodies = fixture.upstream.requests.map(\.body)
        #expect(bodies.count == 2)
        #expect(bodies.allSatisfy { $0 == body }, "the replay carried different bytes")
        #expect(fixture.proxy.runtime.replayBudget.bytesInUse == 0, "the copy's budget came back")
    }

    @Test func replaysAChunkedUploadByteForByte() throws {
        let fixture = try SessionFixture { config, _ in config.accessToken = Secret("stale") }
        let client = try fixture.client()
        client.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
        client.send("4\r\nabcd\r\n")
        // The rest arrives once the proxy has started forwarding (it connected upstream).
        #expect(waitUntil { fixture.upstream.server.acceptedConnections.load(ordering: .relaxed) >= 1 })
        client.send("6;x=y\r\nefghij\r\n0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "abcdefghij")
        #expect(fixture.upstream.requests.last?.body == Array("abcdefghij".utf8))
        #expect(fixture.proxy.runtime.replayBudget.bytesInUse == 0, "the copy's budget came back")
    }

    /// Bodies within replay_body_limit but past what replay_memory_limit has left stream without a
    /// copy: their 401 reaches the client, and the budget is whole again afterwards.
    @Test func aBodyPastTheReplayMemoryLimitStreamsUnreplayable() throws {
        let fixture = try SessionFixture { config, _ in
            config.accessToken = Secret("stale")
            config.replayMemoryLimit = 1000
        }
        let body = String(repeating: "y", count: 5000)
        let response = try httpRequest(
            fixture.address,
            "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n\(body)"
        )
        #expect(response.status == 401)
        #expect(fixture.proxy.runtime.replayBudget.bytesInUse == 0)
        let small = try httpRequest(
            fixture.address,
            "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 500\r\n\r\n\(String(repeating: "z", count: 500))"
        )
        #expect(small.status == 200, "a body within what the budget has left is replayed")
        #expect(waitUntil { fixture.proxy.runtime.replayBudget.bytesInUse == 0 })
    }

    @Test(arguments: TokenFlavour.allCases)
    func aBodyOverTheReplayLimitGetsThe401ButStillStartsTheRefresh(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(flavour: flavour) { config, _ in
            config.accessToken = Secret("stale")
            config.replayBodyLimit = 1024
        }
        let body = String(repeating: "x", count: 10_000)
        let response = try httpRequest(
            fixture.address,
            "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000\r\n\r\n\(body)"
        )
        #expect(response.status == 401)
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { (try? fixture.get("/after").status) == 200 })
        #expect(fixture.tokenServer.callCount == 1)
    }

    @Test func replaysAnExpect100ContinueUploadRefusedBeforeItsBody() throws {
        let fixture = try SessionFixture { config, _ in config.accessToken = Secret("stale") }
        let client = try fixture.client()
        client.send("PUT /echo HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        #expect(try client.readInformational() == 100)
        client.send("hello")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello")
        #expect(fixture.tokenServer.callCount == 1)
    }

    @Test(arguments: TokenFlavour.allCases)
    func invalidGrantAnswers401NamingItAndDoesNotCallAgain(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(flavour: flavour, tokenSettings: { $0.refreshTokens = ["rt-good"] }) {
            config,
            _ in
            config.grantType = .refreshToken
            config.refreshToken = Secret("rt-revoked-secret")
        }
        #expect(fixture.waitForSession { $0.state == "failed" })
        let response = try fixture.get("/x")
        #expect(response.status == 401)
        for word in flavour.refusalWords { #expect(response.text.contains(word)) }
        #expect(try fixture.get("/y").status == 401)
        #expect(fixture.tokenServer.callCount == 1, "a refused grant is not retried on every request")
        #expect(fixture.upstream.requests.isEmpty)
        fixture.expectNoSecretsInLogs(["rt-revoked-secret"])
    }

    @Test(arguments: TokenFlavour.allCases)
    func tokenEndpointDownGives502WithinRefreshTimeout(flavour: TokenFlavour) throws {
        let port = try ErrorPathTests.deadPort()
        let fixture = try SessionFixture(flavour: flavour) { config, _ in
            config.accessToken = Secret("stale")
            config.tokenURL = try? HTTPURL.parse("http://127.0.0.1:\(port)/token").get()
            config.refreshTimeout = .seconds(1)
        }
        let started = Instant.now()
        let response = try fixture.get("/x")
        let elapsed = Instant.now() - started
        #expect(response.status == 502)
        #expect(response.text.contains("Connection refused"))
        #expect(elapsed < .seconds(20), "the request hung instead of failing within refresh_timeout")
        fixture.expectStillServingDirectly()
    }

    @Test(arguments: TokenFlavour.allCases)
    func tokenEndpointThatNeverAnswersGives504(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(flavour: flavour, tokenSettings: { $0.failure = .hang }) { config, _ in
            config.accessToken = Secret("stale")
            config.refreshTimeout = .milliseconds(800)
        }
        let response = try fixture.get("/x")
        #expect(response.status == 504)
        #expect(response.text.contains("refresh_timeout"))
    }

    @Test(arguments: TokenFlavour.allCases)
    func retryAfterBeyondRefreshTimeoutGives503WithRetryAfter(flavour: TokenFlavour) throws {
        let fixture = try SessionFixture(
            flavour: flavour,
            tokenSettings: { $0.failure = .rateLimited(retryAfterSeconds: 120) }
        ) {
            config,
            _ in
            config.accessToken = Secret("stale")
            config.refreshTimeout = .milliseconds(500)
        }
        let response = try fixture.get("/x")
        #expect(response.status == 503)
        let retryAfter = Int(response.header("retry-after") ?? "") ?? 0
        #expect(retryAfter > 100 && retryAfter <= 120)
        #expect(fixture.tokenServer.callCount == 1)
    }

    @Test(arguments: TokenFlavour.allCases)
    func rotatedRefreshTokenIsWrittenToTheFileWithMode0600(flavour: TokenFlavour) throws {
        let directory = try ScratchSpace.newDirectory("rt")
        let path = directory + "/refresh_token"
        try "rt-initial-secret\n".write(toFile: path, atomically: true, encoding: .utf8)
        let fixture = try SessionFixture(
            flavour: flavour,
            tokenSettings: {
                $0.refreshTokens = ["rt-initial-secret"]
                $0.rotatesRefreshTokens = true
            }
        ) { config, _ in
            config.grantType = .refreshToken
            config.refreshTokenFile = path
        }
        #expect(fixture.waitForTokenCalls(1))
        #expect(
            waitUntil {
                (try? String(contentsOfFile: path, encoding: .utf8))?.hasPrefix("rt-") == true
                    && (try? String(contentsOfFile: path, encoding: .utf8)) != "rt-initial-secret\n"
            }
        )
        let stored = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(fixture.tokenServer.recordedCalls.first?.presentedRefreshToken == "rt-initial-secret")
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // The next refresh spends the rotated token, not the old one.
        fixture.authority.revokeAll()
        #expect(try fixture.get("/x").status == 200)
        #expect(fixture.tokenServer.recordedCalls.last?.presentedRefreshToken == stored)
        fixture.expectNoSecretsInLogs(["rt-initial-secret", stored])
    }

    @Test(arguments: TokenFlavour.allCases)
    func usesARefreshTokenAnotherProcessRotatedInTheFile(flavour: TokenFlavour) throws {
        let directory = try ScratchSpace.newDirectory("rt")
        let path = directory + "/refresh_token"
        try "rt-one\n".write(toFile: path, atomically: true, encoding: .utf8)
        let fixture = try SessionFixture(flavour: flavour, tokenSettings: { $0.refreshTokens = ["rt-one", "rt-two"] }) {
            config,
            _ in
            config.grantType = .refreshToken
            config.refreshTokenFile = path
        }
        #expect(fixture.waitForTokenCalls(1))
        // Another tool rotates the token in the shared file; the next refresh must spend the new one.
        try "rt-two\n".write(toFile: path, atomically: true, encoding: .utf8)
        fixture.authority.revokeAll()
        #expect(try fixture.get("/x").status == 200)
        #expect(fixture.tokenServer.recordedCalls.map { $0.presentedRefreshToken ?? "" } == ["rt-one", "rt-two"])
    }

    @Test(arguments: TokenFlavour.allCases)
    func aReplacedRefreshTokenFileEndsAPermanentFailure(flavour: TokenFlavour) throws {
        let directory = try ScratchSpace.newDirectory("rt")
        let path = directory + "/refresh_token"
        try "rt-bad\n".write(toFile: path, atomically: true, encoding: .utf8)
        let fixture = try SessionFixture(flavour: flavour, tokenSettings: { $0.refreshTokens = ["rt-good"] }) {
            config,
            _ in
            config.grantType = .refreshToken
            config.refreshTokenFile = path
        }
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { (try? fixture.get("/x").status) == 401 })
        try "rt-good\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(waitUntil { (try? fixture.get("/x").status) == 200 })
        #expect(fixture.tokenServer.callCount == 2)
    }

    @Test(arguments: TokenFlavour.allCases)
    func aRefreshTokenFileWrittenAfterStartIsUsedWithoutWaitingForARequest(flavour: TokenFlavour) throws {
        // The proxy starts before `bearer-proxy login` has written the file.
        let directory = try ScratchSpace.newDirectory("rt")
        let path = directory + "/refresh_token"
        let fixture = try SessionFixture(flavour: flavour, tokenSettings: { $0.refreshTokens = ["rt-from-login"] }) {
            config,
            _ in
            config.grantType = .refreshToken
            config.refreshTokenFile = path
        }
        let session = fixture.proxy.runtime.session
        #expect(waitUntil { session.status.state == "failed" })
        #expect(
            session.status.failure
                == "bearer-proxy: no refresh token yet: \(path) does not exist yet; run 'bearer-proxy login' (a running proxy picks the new file up by itself)"
        )
        #expect(fixture.tokenServer.callCount == 0)
        try "rt-from-login\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(waitUntil { session.status.state == "ready" })
        #expect(fixture.tokenServer.recordedCalls.map(\.presentedRefreshToken) == ["rt-from-login"])
        #expect(fixture.upstream.requests.isEmpty, "no request was needed to notice the file")
        #expect(try fixture.get("/x").status == 200)
        fixture.expectNoSecretsInLogs(["rt-from-login"])
    }

    @Test(arguments: [ClientAuthentication.basic, .post])
    func clientCredentialsAuthenticateTheClient(method: ClientAuthentication) throws {
        let fixture = try SessionFixture { config, _ in
            config.clientAuthentication = method
            config.scope = "read write"
            config.audience = "https://api.example.com"
        }
        #expect(fixture.waitForTokenCalls(1))
        #expect(try fixture.get("/x").status == 200)
        let call = try #require(fixture.tokenServer.recordedCalls.first)
        #expect(call.form["grant_type"] == "client_credentials")
        #expect(call.form["scope"] == "read write")
        #expect(call.form["audience"] == "https://api.example.com")
        switch method {
        case .basic:
            let expected = "Basic " + Data("proxy-client:\(SessionFixture.clientSecret)".utf8).base64EncodedString()
            #expect(call.authorization == expected)
            #expect(call.form["client_secret"] == nil)
        case .post:
            #expect(call.authorization == nil)
            #expect(call.form["client_id"] == "proxy-client")
            #expect(call.form["client_secret"] == SessionFixture.clientSecret)
        case .privateKeyJWT, .tlsClientAuth:
            Issue.record("not an argument of this test (see ClientCredentialTests)")
        }
        fixture.expectNoSecretsInLogs()
    }

    @Test func passwordGrantSendsTheUserCredentials() throws {
        let fixture = try SessionFixture { config, _ in
            config.grantType = .password
            config.username = "alice"
            config.password = Secret("alice-password-secret")
        }
        #expect(fixture.waitForTokenCalls(1))
        #expect(try fixture.get("/x").status == 200)
        let call = try #require(fixture.tokenServer.recordedCalls.first)
        #expect(call.form["grant_type"] == "password")
        #expect(call.form["username"] == "alice")
        #expect(call.form["password"] == "alice-password-secret")
        fixture.expectNoSecretsInLogs(["alice-password-secret"])
    }

    @Test func theRefreshLogLineSaysHowManyRequestsWaitedForTheToken() throws {
        let fixture = try SessionFixture { config, _ in config.accessToken = Secret("stale-log-line-token") }
        #expect(try fixture.get("/x").status == 200)
        let line = fixture.logs.capturedLines.first { $0.contains("token refreshed") }?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line?.contains(" trigger=401 ") == true, "\(line ?? "no line")")
        #expect(line?.hasSuffix(" waiting_requests=1") == true, "\(line ?? "no line")")
    }

    @Test func tokenCommandProvidesTheToken() throws {
        let fixture = try SessionFixture(acceptedTokens: ["cmd-token-77"]) { config, _ in
            config.tokenURL = nil
            config.tokenCommand = ["/bin/echo", "cmd-token-77"]
        }
        #expect(fixture.waitForSession { $0.state == "ready" })
        let response = try fixture.get("/x")
        #expect(response.status == 200)
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer cmd-token-77")
        fixture.expectNoSecretsInLogs(["cmd-token-77"])
    }

    @Test func tokenCommandMayPrintAnOAuth2JSONResponse() throws {
        let fixture = try SessionFixture(acceptedTokens: ["json-token-5"]) { config, _ in
            config.tokenURL = nil
            config.tokenCommand = [
                "/bin/sh", "-c", #"echo '{"access_token":"json-token-5","token_type":"Bearer","expires_in":3600}'"#,
            ]
        }
        #expect(waitUntil { (try? fixture.get("/x").status) == 200 })
    }

    @Test func aFailingTokenCommandIsNamedWithItsStderr() throws {
        let fixture = try SessionFixture { config, _ in
            config.tokenURL = nil
            config.tokenCommand = ["/bin/sh", "-c", "echo 'vault: permission denied' >&2; exit 3"]
        }
        #expect(fixture.waitForSession { $0.state == "failed" })
        let response = try fixture.get("/x")
        #expect(response.status == 502)
        #expect(response.text.contains("exited with status 3: vault: permission denied"))
    }

    @Test func withoutATokenSourceA401PassesThrough() throws {
        let fixture = try ProxyFixture(acceptedTokens: ["something-else"])
        let response = try fixture.get("/x")
        #expect(response.status == 401)
        #expect(fixture.upstream.requests.count == 1)
    }

    @Test(arguments: TokenFlavour.allCases)
    func stormGuardStopsRefreshingTokensThatNeverWork(flavour: TokenFlavour) throws {
        // The upstream rejects every token the server issues (wrong audience, say).
        let fixture = try SessionFixture(
            flavour: flavour,
            acceptedTokens: ["never-issued"],
            upstreamTrustsTokenServer: false
        ) {
            config,
            _ in
            config.maxRefreshes = 2
            config.refreshWindow = .seconds(60)
        }
        #expect(fixture.waitForTokenCalls(1))
        for _ in 0..<6 { #expect(try fixture.get("/x").status == 401) }
        #expect(
            fixture.tokenServer.callCount <= 3,
            "the token endpoint was hammered: \(fixture.tokenServer.callCount) calls"
        )
        #expect(fixture.logs.capturedLines.filter { $0.contains("storm guard") }.count == 1)
    }
}

extension SessionFixture {
    func expectStillServingDirectly(sourceLocation: SourceLocation = #_sourceLocation) {
        // A request to a host that needs no token still goes through while the token endpoint is down.
        let other = MockUpstream(group: mockGroup)
        do {
            try other.start()
        } catch {
            Issue.record("cannot start a second mock upstream: \(error)", sourceLocation: sourceLocation)
            return
        }
        defer { other.stop() }
        let authority = "127.0.0.1:\(other.port)"
        let response = try? httpRequest(
            self.address,
            "GET http://\(authority)/free HTTP/1.1\r\nHost: \(authority)\r\n\r\n"
        )
        #expect(response?.status == 200, sourceLocation: sourceLocation)
    }
}
