import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerCLI
@testable import BearerSession

@Suite struct PKCETests {
    @Test func matchesTheExampleOfRFC7636AppendixB() {
        let pkce = PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", state: "s")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(MockTokenServer.s256(pkce.verifier) == pkce.challenge, "the mock checks with the same transform")
    }

    @Test func verifiersAreLongUnreservedAndNeverRepeat() {
        let logins = (0..<50).map { _ in PKCE() }
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        for login in logins {
            #expect(login.verifier.count == 43)
            #expect(login.verifier.unicodeScalars.allSatisfy { $0.isASCII && unreserved.contains($0) })
            #expect(login.state.count == 22)
        }
        #expect(Set(logins.map(\.verifier)).count == 50)
        #expect(Set(logins.map(\.state)).count == 50)
    }
}

@Suite struct LoopbackCallbackTests {
    static let callback = LoopbackCallback(expectedState: "st-123")

    @Test(arguments: [
        ("accept", "GET", "/callback?code=abc%2Fdef&state=st-123", LoopbackCallback.Verdict.accept(code: "abc/def")),
        (
            "deny", "GET", "/callback?state=st-123&error=access_denied&error_description=User+said+no",
            .deny(code: "access_denied", description: "User said no")
        ),
        (
            "wrong state", "GET", "/callback?code=abc&state=other",
            .refuse(
                status: 400,
                reason: "This callback's state does not match the login in progress, so it was refused."
            )
        ),
        (
            "no state", "GET", "/callback?code=abc",
            .refuse(
                status: 400,
                reason: "This callback's state does not match the login in progress, so it was refused."
            )
        ),
        (
            "an error under another state", "GET", "/callback?error=access_denied&state=x",
            .refuse(
                status: 400,
                reason: "This callback's state does not match the login in progress, so it was refused."
            )
        ),
        (
            "no code", "GET", "/callback?state=st-123",
            .refuse(status: 400, reason: "The callback carries no authorization code.")
        ),
        (
            "favicon", "GET", "/favicon.ico",
            .refuse(status: 404, reason: "This is bearer-proxy's login listener; there is nothing here.")
        ),
        (
            "post", "POST", "/callback?code=abc&state=st-123",
            .refuse(status: 405, reason: "The login callback is a GET.")
        ),
    ])
    func judgesWhatReachesTheListener(id: String, method: String, target: String, expected: LoopbackCallback.Verdict) {
        #expect(Self.callback.judge(method: method, target: target) == expected, "\(id)")
    }

    @Test func pagesEscapeWhatTheServerSaid() {
        let (status, html) = LoopbackCallback.page(for: .deny(code: "access_denied", description: "<script>x</script>"))
        #expect(status == 200)
        #expect(html.contains("&lt;script&gt;x&lt;/script&gt;"))
        #expect(!html.contains("<script>"))
    }
}

@Suite struct LoopbackRedirectServerTests {
    func get(_ port: Int, _ target: String) throws -> BlockingHTTPClient.Response {
        try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
    }

    @Test func acceptsOneCallbackThenCloses() throws {
        let server = try LoopbackRedirectServer(
            port: 0,
            callback: LoopbackCallback(expectedState: "good"),
            loop: mockGroup.loops[0]
        )
        #expect(server.redirectURI == "http://127.0.0.1:\(server.port)/callback")
        #expect(try self.get(server.port, "/callback?state=bad&code=x").status == 400)
        #expect(try self.get(server.port, "/favicon.ico").status == 404)
        let page = try self.get(server.port, "/callback?state=good&code=the-code")
        #expect(page.status == 200)
        #expect(page.text.contains("You may close this window."))
        #expect(server.waitForCallback(until: Instant.now() + .seconds(10)) == .accept(code: "the-code"))
        #expect(throws: BlockingHTTPClient.ClientError.connectFailed(ECONNREFUSED)) {
            try self.get(server.port, "/callback?state=good&code=again")
        }
    }

    @Test func listensOnLoopbackOnly() throws {
        let server = try LoopbackRedirectServer(
            port: 0,
            callback: LoopbackCallback(expectedState: "s"),
            loop: mockGroup.loops[0]
        )
        defer { server.stopListening() }
        // Bound to 127.0.0.1 itself, not to a wildcard address: no other host can deliver a code.
        #expect(server.address.description == "127.0.0.1:\(server.port)")
        #expect(server.port > 0)
    }

    @Test func aPortInUseIsNamed() throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        let port = Socket.localAddress(fd)!.port!
        #expect(
            throws: LoginError.cannotListen(
                "127.0.0.1:\(port): Address already in use (set redirect_port to a free port, or 0)"
            )
        ) {
            try LoopbackRedirectServer(
                port: port,
                callback: LoopbackCallback(expectedState: "s"),
                loop: mockGroup.loops[0]
            )
        }
    }
}

@Suite struct DeviceAuthorizationPollerTests {
    static let start = Instant(nanoseconds: 1_000_000_000_000)
    func at(_ seconds: Double) -> Instant { Self.start + .milliseconds(Int64(seconds * 1000)) }

    func poller(
        interval: Duration? = .seconds(2),
        expiresIn: Duration = .seconds(60),
        timeout: Duration = .seconds(300)
    )
        -> DeviceAuthorizationPoller
    {
        DeviceAuthorizationPoller(
            interval: interval,
            expiresIn: expiresIn,
            loginDeadline: Self.start + timeout,
            loginTimeout: timeout,
            now: Self.start
        )
    }

    @Test func pendingThenSlowDownThenApproved() {
        var poller = self.poller()
        #expect(poller.started(now: self.at(0)) == .poll(after: .seconds(2)))
        #expect(poller.answered(.pending, now: self.at(2)) == .poll(after: .seconds(2)))
        #expect(poller.answered(.slowDown, now: self.at(4)) == .poll(after: .seconds(7)))
        #expect(poller.answered(.pending, now: self.at(11)) == .poll(after: .seconds(7)), "slow_down lasts")
        #expect(poller.answered(.slowDown, now: self.at(18)) == .poll(after: .seconds(12)))
        #expect(poller.answered(.approved, now: self.at(30)) == .succeed)
    }

    @Test func withoutAnIntervalItPollsEveryFiveSeconds() {
        #expect(self.poller(interval: nil).started(now: self.at(0)) == .poll(after: .seconds(5)))
    }

    @Test func deniedAndExpiredAnswersStop() {
        var poller = self.poller()
        #expect(
            poller.answered(.denied(description: "no"), now: self.at(2))
                == .fail(.denied(code: "access_denied", description: "no"))
        )
        #expect(
            self.poller().answeredCopy(.expired(description: nil), now: self.at(2))
                == .fail(.deviceCodeExpired(description: nil))
        )
        let refusal = SessionFailure.rejected(code: "invalid_client", description: nil)
        #expect(self.poller().answeredCopy(.refused(refusal), now: self.at(2)) == .fail(.refused(refusal)))
    }

    /// A user searching the provider's documentation needs the code: each stopping line names it,
    /// and only the server's own answer is told as the server's.
    @Test func theStoppingLinesNameTheRFC8628Codes() {
        #expect(
            LoginError.denied(code: "access_denied", description: "The user said no").description
                == "the authorization server denied the login: access_denied (The user said no)"
        )
        #expect(
            LoginError.deviceCodeExpired(description: nil).description
                == "the authorization server answered expired_token: the device code expired before the login was approved; run 'bearer-proxy login --device' again"
        )
        #expect(
            LoginError.deviceCodeLifetimeEnded(lifetime: .seconds(600)).description
                == "the device code expired before the login was approved (its expires_in, 10m, ran out; the server would answer expired_token); run 'bearer-proxy login --device' again"
        )
    }

    @Test func stopsBeforeTheDeviceCodeExpires() {
        var poller = self.poller(expiresIn: .seconds(5))
        #expect(poller.answered(.pending, now: self.at(2)) == .poll(after: .seconds(2)))
        #expect(poller.answered(.pending, now: self.at(4)) == .fail(.deviceCodeLifetimeEnded(lifetime: .seconds(5))))
    }

    @Test func stopsAtLoginTimeoutAndSaysSo() {
        var poller = self.poller(timeout: .seconds(5))
        #expect(poller.answered(.pending, now: self.at(2)) == .poll(after: .seconds(2)))
        #expect(
            poller.answered(.pending, now: self.at(4))
                == .fail(.timedOut(after: .seconds(5), waitingFor: "the device login to be approved"))
        )
    }

    @Test func anUnreachableEndpointIsRetriedThenNamed() {
        var poller = self.poller(timeout: .seconds(5))
        #expect(
            poller.answered(.unavailable(reason: "connection refused"), now: self.at(2)) == .poll(after: .seconds(2))
        )
        #expect(
            poller.answered(.unavailable(reason: "connection refused"), now: self.at(4))
                == .fail(.unreachable("connection refused"))
        )
    }
}

extension DeviceAuthorizationPoller {
    func answeredCopy(_ answer: Answer, now: Instant) -> Action {
        var copy = self
        return copy.answered(answer, now: now)
    }
}

@Suite struct MockAuthorizationServerTests {
    /// The mock must refuse what a real server refuses, or the login tests prove nothing.
    @Test func redeemsACodeOnceAndOnlyWithItsVerifier() throws {
        let server = MockTokenServer(group: mockGroup)
        try server.start()
        defer { server.stop() }
        let redirect = "http://127.0.0.1:9/callback"
        let address = SocketAddress(ipAddress: "127.0.0.1", port: server.server.port)!
        func authorize(_ pkce: PKCE) throws -> String {
            let query = formEncode([
                ("response_type", "code"), ("client_id", "c"), ("redirect_uri", redirect), ("state", pkce.state),
                ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"),
            ])
            let authorization = try httpRequest(address, "GET /oauth/authorize?\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(authorization.status == 302)
            let location = try #require(authorization.header("location"))
            return try #require(LoopbackCallback.parseQuery(String(location.split(separator: "?")[1]))["code"])
        }
        func redeem(_ code: String, _ verifier: String) throws -> BlockingHTTPClient.Response {
            let body = formEncode([
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect),
                ("code_verifier", verifier), ("client_id", "c"),
            ])
            return try httpRequest(
                address,
                "POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
        }
        let first = PKCE()
        let stolenCode = try authorize(first)
        let stolen = try redeem(stolenCode, PKCE().verifier)
        #expect(stolen.status == 400)
        #expect(stolen.text.contains("PKCE verification failed"))
        // A failed attempt spends the code too: a code is used once (RFC 6749 §4.1.2).
        #expect(try redeem(stolenCode, first.verifier).status == 400)
        let second = PKCE()
        let code = try authorize(second)
        let redeemed = try redeem(code, second.verifier)
        #expect(redeemed.status == 200)
        #expect(redeemed.text.contains("refresh_token"))
        #expect(try redeem(code, second.verifier).status == 400)
    }
}

@Suite struct SubcommandHelpTests {
    @Test func loginHelpIsStable() {
        #expect(
            LoginCommand.syntax.helpText == """
                OVERVIEW: Log in once and store the refresh token in refresh_token_file, so the proxy can get
                tokens by itself. A running bearer-proxy picks the new file up within a second.

                USAGE: bearer-proxy login [<url>] [--config <file>] [--session <name>] [--device] [--no-browser] [--scope <scope>] [--print]

                OPTIONS:
                  --config <file>         The proxy's config file: how to log in, where the token goes.
                  --device                Log in on another device with a code (OAuth2 device authorization,
                                          RFC 8628). The default when only device_authorization_url is set.
                  --no-browser            Print the authorization URL without opening a browser.
                  --print                 With <url>: print the new [session <name>] instead of adding it to
                                          the config file.
                  --scope <scope>         With <url>: the scope the new session asks for (its scope key).
                  --session <name>        The [session <name>] of the config file to log in (default: the
                                          keys outside any section).
                  -h, --help              Show help information.

                How: token_format = json logs in at login_url (a username or password missing from the config
                is asked for on the terminal, the password without echo); authorization_url opens a browser
                (authorization code with PKCE; the answer comes back to http://127.0.0.1:<port>/callback);
                device_authorization_url prints a code to enter elsewhere. Gives up after login_timeout
                (default: 5m). Prints the token's expiry and scope, never a token.

                With <url> (the API's address) it needs no config: it asks the API without a token, reads
                the protected resource metadata its 401 names (RFC 9728) and its authorization server's
                (RFC 8414), registers bearer-proxy as a client when there is no client_id (RFC 7591), logs
                in (the browser; the device code with --device or when no browser can be opened), stores
                the refresh token, and adds a [session <name>] for the API to the config file (created
                when missing; an existing one is only appended to). Then 'bearer-proxy --config <file>'
                serves the API with the token.

                """
        )
    }

    @Test func logoutHelpIsStable() {
        #expect(
            LogoutCommand.syntax.helpText == """
                OVERVIEW: Revoke the stored refresh token (at revocation_url, or at logout_url for
                token_format = json) and delete refresh_token_file (or the keyring item) and the client a login
                registered. They are deleted even when the server cannot be reached. Its lock file (<file>.lock) stays: removing a lock another process may hold
                would let two processes spend one refresh token.

                USAGE: bearer-proxy logout [--config <file>] [--session <name>]

                OPTIONS:
                  --config <file>         The proxy's config file.
                  --session <name>        The [session <name>] of the config file to log out (default: the
                                          keys outside any section).
                  -h, --help              Show help information.

                """
        )
    }

    @Test(arguments: [
        (
            ["--config", "p.conf", "--device", "--no-browser"],
            LoginCommand.Options(configPath: "p.conf", usesDevice: true, opensBrowser: false)
        ),
        (["--config=p.conf"], LoginCommand.Options(configPath: "p.conf")),
        (
            ["https://api.example.com/", "--scope", "read write", "--print"],
            LoginCommand.Options(url: "https://api.example.com/", scope: "read write", printsSection: true)
        ),
        (["--config", "p.conf", "--session=github"], LoginCommand.Options(configPath: "p.conf", session: "github")),
    ])
    func parsesLoginFlags(arguments: [String], expected: LoginCommand.Options) throws {
        #expect(try LoginCommand.parse(arguments) == expected)
        #expect(try ParsedArguments(["-h"], for: LoginCommand.syntax).isHelp)
    }

    @Test func refusesWhatItDoesNotKnow() {
        #expect(throws: CommandLineError.unknownOption("--device")) { try LogoutCommand.parse(["--device"]) }
        #expect(throws: CommandLineError.unknownOption("--session")) { try CACommand.parse(["--session", "a"]) }
        #expect(throws: CommandLineError.missingValue("--session")) { try LogoutCommand.parse(["--session"]) }
        #expect(throws: CommandLineError.missingValue("--config")) { try LoginCommand.parse(["--config"]) }
        #expect(throws: CommandLineError.unexpectedArgument("now")) {
            try LoginCommand.parse(["https://api.example.com", "now"])
        }
    }

    @Test func summariesNameExpiryAndScopeButNoToken() {
        let token = FetchedToken(
            accessToken: Secret("at-summary-secret"),
            expiresIn: .seconds(3900),
            refreshToken: Secret("rt-summary-secret"),
            scope: "read write"
        )
        let summary = LoginCommand.summary(token, file: "/home/u/rt", now: 1_800_000_000)
        #expect(
            summary == """
                Logged in. The refresh token is stored in /home/u/rt (mode 0600); a running bearer-proxy uses it within a second.
                The access token expires in 1h 5m (2027-01-15T09:05:00Z); scope: read write.
                """
        )
    }
}
