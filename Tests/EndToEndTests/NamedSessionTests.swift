import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Dispatch
import Foundation
import Glibc
import Testing

/// Three APIs behind one proxy process (docs/sessions.md, "Several APIs in one proxy"), each with its own
/// token server whose authority the other APIs refuse: a token that reached the wrong API would be
/// answered 401. The default session is the keys outside any section; `a` is mounted at `/a`; `b`
/// has a listener of its own.
final class ThreeAPIs {
    typealias API = MockAPI

    let apis: [String: API]
    let proxy: ProxyProcess
    let main: SocketAddress
    let b: SocketAddress
    let admin: SocketAddress?

    /// `extra`: process-wide lines added above the sections.
    init(_ extra: String = "", sessionLines: [String: String] = [:]) throws {
        var apis: [String: API] = [:]
        for name in ["default", "a", "b"] { apis[name] = try MockAPI(name, secret: "\(name)-secret-e2e") }
        self.apis = apis
        func keys(_ name: String) -> String {
            let api = apis[name]!
            return """
                upstream = \(api.upstream.baseURL)
                token_url = \(api.tokens.url)
                client_id = \(name)-client
                client_secret = ${SECRET_\(name.uppercased())}
                \(sessionLines[name] ?? "")
                """
        }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            \(extra)
            \(keys("default"))

            [session a]
            mount = /a
            \(keys("a"))

            [session b]
            listen = 127.0.0.1:0
            \(keys("b"))
            """
        )
        let proxy = try ProxyProcess(
            ["--config", config],
            environment: [
                "SECRET_DEFAULT": "default-secret-e2e", "SECRET_A": "a-secret-e2e", "SECRET_B": "b-secret-e2e",
            ]
        )
        self.proxy = proxy
        // The ready lines: the main listener's, then b's.
        guard proxy.waitUntilListening(session: "b") != nil,
            let main = Self.address(in: proxy.standardError, session: nil),
            let b = Self.address(in: proxy.standardError, session: "b")
        else {
            throw TestFailure(description: "the proxy did not start: \(proxy.standardError)")
        }
        self.main = main
        self.b = b
        self.admin = word(startingWith: "admin=", in: proxy.standardError).flatMap { text in
            try? tcpPort(of: String(text.dropFirst(6)))
        }.flatMap { SocketAddress(ipAddress: "127.0.0.1", port: $0) }
    }

    deinit {
        self.proxy.signal(SIGTERM)
        _ = self.proxy.waitForExit()
        for api in self.apis.values { api.stop() }
    }

    subscript(name: String) -> API { self.apis[name]! }

    /// The address of a `listening on` line: the main listener's (no session), or a session's.
    static func address(in log: String, session: String?) -> SocketAddress? {
        for line in log.split(separator: "\n") where line.contains("listening on ") {
            guard line.contains("session=") == (session != nil) else { continue }
            if let session, !line.contains("session=\(session) ") { continue }
            let text = line.components(separatedBy: "listening on ")[1].prefix { !$0.isWhitespace }
            guard let port = try? tcpPort(of: String(text)) else { return nil }
            return SocketAddress(ipAddress: "127.0.0.1", port: port)
        }
        return nil
    }

    func get(_ target: String, on address: SocketAddress? = nil) throws -> BlockingHTTPClient.Response {
        let address = address ?? self.main
        return try httpRequest(address, "GET \(target) HTTP/1.1\r\nHost: \(address)\r\n\r\n")
    }

    func admin(_ method: String, _ target: String) throws -> BlockingHTTPClient.Response {
        let admin = try #require(self.admin)
        return try httpRequest(
            admin,
            "\(method) \(target) HTTP/1.1\r\nHost: \(admin)\r\nContent-Length: 0\r\n\r\n",
            method: method == "POST" ? .post : .get
        )
    }

    /// The token calls each API's token server has had, by name.
    var tokenCalls: [String: Int] { self.apis.mapValues(\.tokens.callCount) }

    /// The last request `name`'s API got, and the token it carried.
    func lastRequest(_ name: String) -> (target: String, token: String?)? {
        self[name].upstream.requests.last.map { ($0.target, $0.header("authorization")) }
    }
}

/// One API of several behind a proxy: its token server (client `NAME-client`), and an upstream that
/// accepts only the tokens that server issued (`NAME-access-N`), so a token that reached the wrong
/// API is answered 401.
struct MockAPI {
    let name: String
    let authority: MockTokenAuthority
    let tokens: MockTokenServer
    let upstream: MockUpstream

    init(_ name: String, secret: String) throws {
        self.name = name
        self.authority = MockTokenAuthority(prefix: "\(name)-access-")
        var settings = MockTokenServer.Settings()
        settings.clientID = "\(name)-client"
        settings.clientSecret = secret
        self.tokens = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
        try self.tokens.start()
        self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority)
        try self.upstream.start()
    }

    func stop() {
        self.tokens.stop()
        self.upstream.stop()
    }
}

@Suite struct NamedSessionTests {
    @Test func eachListenerMountAndHostReachesItsOwnAPIWithItsOwnToken() throws {
        let proxy = try ThreeAPIs()
        #expect(waitUntil { proxy.tokenCalls == ["default": 1, "a": 1, "b": 1] }, "one token each at start")

        // The default session: paths no mount takes, on the main listener.
        for target in ["/whoami", "/ab", "/x/a"] {
            #expect(try proxy.get(target).status == 200)
            #expect(proxy.lastRequest("default")?.target == target)
            #expect(proxy.lastRequest("default")?.token == "Bearer default-access-1")
        }
        // Session a: its mount, removed, whole segments only.
        for (target, forwarded) in [("/a/whoami", "/whoami"), ("/a", "/"), ("/a?q=1", "/?q=1"), ("/a/", "/")] {
            let response = try proxy.get(target)
            #expect(response.status == 200, "\(target): \(response.text)")
            #expect(proxy.lastRequest("a")?.target == forwarded)
            #expect(proxy.lastRequest("a")?.token == "Bearer a-access-1")
        }
        // Session b: its own listener, every path.
        for target in ["/whoami", "/a/whoami"] {
            #expect(try proxy.get(target, on: proxy.b).status == 200)
            #expect(proxy.lastRequest("b")?.target == target)
            #expect(proxy.lastRequest("b")?.token == "Bearer b-access-1")
        }
        // By host: an absolute-form request is the session's whose inject_hosts match.
        for name in ["a", "b", "default"] {
            let url = proxy[name].upstream.baseURL + "/by-host"
            let response = try proxy.get(url)
            #expect(response.status == 200)
            #expect(proxy.lastRequest(name)?.target == "/by-host")
            #expect(proxy.lastRequest(name)?.token == "Bearer \(name)-access-1")
        }
        #expect(proxy.tokenCalls == ["default": 1, "a": 1, "b": 1])
        for api in ["default", "a", "b"] { #expect(proxy[api].upstream.rejected.load(ordering: .relaxed) == 0) }
    }

    /// Both a's and b's APIs revoke every token at once, under load on all three sessions: one token
    /// call each for a and b, none for the default session, no 401 for any client.
    @Test func concurrentRevocationsOnTwoSessionsCostOneTokenCallEachAndNoneForTheThird() throws {
        let proxy = try ThreeAPIs()
        #expect(try proxy.get("/a/warm").status == 200)
        #expect(try proxy.get("/warm", on: proxy.b).status == 200)
        #expect(try proxy.get("/warm").status == 200)
        #expect(proxy.tokenCalls == ["default": 1, "a": 1, "b": 1])
        proxy["a"].authority.revokeAll()
        proxy["b"].authority.revokeAll()
        // Every request is sent before any answer is read: 48 in flight at once, 16 per session.
        var clients: [(name: String, client: BlockingHTTPClient)] = []
        for index in 0..<48 {
            let (name, target, address): (String, String, SocketAddress) =
                switch index % 3 {
                case 0: ("a", "/a/storm-\(index)", proxy.main)
                case 1: ("b", "/storm-\(index)", proxy.b)
                default: ("default", "/storm-\(index)", proxy.main)
                }
            let client = try BlockingHTTPClient(connectingTo: address)
            client.send("GET \(target) HTTP/1.1\r\nHost: \(address)\r\n\r\n")
            clients.append((name, client))
        }
        var statuses: [String: [Int]] = [:]
        for (name, client) in clients { statuses[name, default: []].append((try? client.readResponse().status) ?? -1) }
        for (name, seen) in statuses {
            #expect(seen.count == 16 && seen.allSatisfy { $0 == 200 }, "\(name): \(seen)")
        }
        #expect(proxy.tokenCalls == ["default": 1, "a": 2, "b": 2])
        #expect(proxy["default"].upstream.rejected.load(ordering: .relaxed) == 0)
        // Each refresh's log line names its session: read once the proxy stopped and its log is whole.
        #expect(proxy.proxy.stop() == 0)
        func refreshes(_ session: String) -> Int {
            proxy.proxy.standardError.split(separator: "\n").filter {
                $0.contains("token refreshed session=\(session) ")
            }.count
        }
        #expect(refreshes("a") == 2 && refreshes("b") == 2, "\(proxy.proxy.standardError)")
        #expect(refreshes("default") == 1)
    }

    /// a's token endpoint refuses it for good: a's clients get the 401 naming why, the others go on.
    @Test func aPermanentFailureOfOneSessionLeavesTheOthersServing() throws {
        let proxy = try ThreeAPIs()
        #expect(waitUntil { proxy.tokenCalls == ["default": 1, "a": 1, "b": 1] })
        proxy["a"].tokens.update { $0.failure = .invalidGrant }
        proxy["a"].authority.revokeAll()
        let refused = try proxy.get("/a/after")
        #expect(refused.status == 401)
        #expect(refused.text.contains("invalid_grant"), "\(refused.text)")
        #expect(try proxy.get("/a/again").status == 401, "later requests get the same 401 at once")
        #expect(proxy.tokenCalls["a"] == 2)
        for _ in 0..<3 {
            #expect(try proxy.get("/still").status == 200)
            #expect(try proxy.get("/still", on: proxy.b).status == 200)
        }
        // b can still refresh on its own.
        proxy["b"].authority.revokeAll()
        #expect(try proxy.get("/after-b-revoked", on: proxy.b).status == 200)
        #expect(proxy.tokenCalls == ["default": 1, "a": 2, "b": 2])
    }

    @Test func adminRefreshLogoutStatusAndMetricsBySession() throws {
        let proxy = try ThreeAPIs("admin_listen = 127.0.0.1:0")
        #expect(waitUntil { proxy.tokenCalls == ["default": 1, "a": 1, "b": 1] })
        // Stored, not only asked for: a refresh asked for while the start-up call is answered joins it.
        #expect(
            waitUntil {
                guard let text = try? proxy.admin("GET", "/status").text,
                    let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                    let sessions = object["sessions"] as? [String: [String: Any]]
                else { return false }
                return sessions.count == 3 && sessions.values.allSatisfy { $0["token_generation"] as? Int == 1 }
            },
            "every session holds its first token"
        )

        let refreshed = try proxy.admin("POST", "/refresh?session=a")
        #expect(refreshed.status == 200)
        #expect(refreshed.text == #"{"outcome":"ok","token_generation":2}"# + "\n")
        #expect(proxy.tokenCalls == ["default": 1, "a": 2, "b": 1])
        #expect(try proxy.admin("POST", "/refresh").status == 200, "no parameter: the default session")
        #expect(proxy.tokenCalls == ["default": 2, "a": 2, "b": 1])
        let unknown = try proxy.admin("POST", "/refresh?session=nope")
        #expect(unknown.status == 404)
        #expect(unknown.text == "bearer-proxy: there is no session 'nope' (the sessions are default, a, b)\n")
        #expect(try proxy.admin("POST", "/logout?session=c").status == 404)
        #expect(try proxy.admin("POST", "/refresh?sessions=a").status == 400)

        let loggedOut = try proxy.admin("POST", "/logout?session=b")
        #expect(loggedOut.status == 200)
        let refusedB = try proxy.get("/after-logout", on: proxy.b)
        #expect(refusedB.status == 401)
        #expect(refusedB.text.contains("logged out"), "\(refusedB.text)")
        #expect(try proxy.get("/a/after-logout").status == 200)
        #expect(try proxy.get("/after-logout").status == 200)

        let status = try proxy.admin("GET", "/status")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.text.utf8)) as? [String: Any])
        // The top level is the default session's, as in a file without sections, and says so.
        #expect(object["default_session"] as? String == "default")
        #expect(object["token_generation"] as? Int == 2)
        #expect(object["upstream"] as? String == proxy["default"].upstream.baseURL)
        let sessions = try #require(object["sessions"] as? [String: [String: Any]])
        #expect(Set(sessions.keys) == ["default", "a", "b"])
        #expect(sessions["a"]?["token_generation"] as? Int == 2)
        #expect(sessions["a"]?["mount"] as? String == "/a")
        #expect(sessions["a"]?["state"] as? String == "ready")
        #expect(sessions["b"]?["state"] as? String == "logged_out")
        #expect(sessions["b"]?["listen"] as? String == proxy.b.description)
        #expect(sessions["b"]?["upstream"] as? String == proxy["b"].upstream.baseURL)
        #expect(sessions["default"]?["token_generation"] as? Int == 2)
        #expect(!status.text.contains("-secret-e2e") && !status.text.contains("-access-"))

        let metrics = try proxy.admin("GET", "/metrics").text
        for line in [
            #"bearer_proxy_token_refreshes_total{session="a",result="ok"} 2"#,
            #"bearer_proxy_token_refreshes_total{session="b",result="ok"} 1"#,
            #"bearer_proxy_token_refreshes_total{session="default",result="ok"} 2"#,
            #"bearer_proxy_token_generation{session="a"} 2"#,
            #"bearer_proxy_token_generation{session="b"} 1"#,
            #"bearer_proxy_parked_requests{session="default"} 0"#,
            #"bearer_proxy_token_refresh_duration_seconds_count{session="a"} 2"#,
        ] {
            #expect(metrics.contains("\n\(line)\n"), "missing \(line)")
        }
        #expect(metrics.components(separatedBy: "# TYPE bearer_proxy_token_generation gauge").count == 2, "one family")
    }

    @Test func theAccessLogNamesTheSession() throws {
        let proxy = try ThreeAPIs("access_log = stderr")
        #expect(try proxy.get("/a/logged").status == 200)
        #expect(try proxy.get("/logged", on: proxy.b).status == 200)
        #expect(try proxy.get("/logged").status == 200)
        let other = try MockUpstream(group: e2eMockGroup).started()
        defer { other.stop() }
        #expect(try proxy.get(other.baseURL + "/logged").status == 200)
        // The four requests were answered; their lines are read once the proxy stopped.
        #expect(proxy.proxy.stop() == 0)
        let lines = proxy.proxy.standardError.split(separator: "\n").filter { $0.contains(" info request ") }
        // The path as the client sent it: a's with its mount.
        for (session, host, path) in [
            ("a", proxy["a"].upstream.port, "/a/logged"), ("b", proxy["b"].upstream.port, "/logged"),
            ("default", proxy["default"].upstream.port, "/logged"),
            ("-", other.port, "http://127.0.0.1:\(other.port)/logged"),
        ] {
            let expected = "host=127.0.0.1:\(host) session=\(session) path=\(path) status=200"
            #expect(lines.contains { $0.contains(expected) }, "no line with \(expected) in \(lines)")
        }
    }

    /// Paths under no mount go to the default session; without a default upstream they get a 404
    /// naming the mounts.
    @Test func withoutADefaultUpstreamAPathNoMountTakesIs404() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["only-a"])
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            [session a]
            mount = /a
            upstream = \(upstream.baseURL)
            access_token = only-a
            [session nested]
            mount = /a/v2
            upstream = \(upstream.baseURL)/nested
            inject_hosts = 127.0.0.2
            access_token = only-nested
            """
        )
        let proxy = try ProxyProcess(["--config", config])
        defer {
            proxy.signal(SIGTERM)
            _ = proxy.waitForExit()
        }
        let address = try #require(proxy.waitUntilListening())
        let main = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: address))!
        let missing = try httpRequest(main, "GET /elsewhere HTTP/1.1\r\nHost: \(main)\r\n\r\n")
        #expect(missing.status == 404)
        #expect(
            missing.text
                == "bearer-proxy: no session takes this path: it is under none of the mounts (/a, /a/v2) and the default session has no upstream\n"
        )
        #expect(try httpRequest(main, "GET /a/x HTTP/1.1\r\nHost: \(main)\r\n\r\n").status == 200)
        #expect(upstream.requests.last?.target == "/x")
        // The longer mount wins; its upstream's path prefix is prepended. (Its upstream is not one
        // of its inject hosts: the request goes without a token, and the API refuses it.)
        #expect(try httpRequest(main, "GET /a/v2/y HTTP/1.1\r\nHost: \(main)\r\n\r\n").status == 401)
        #expect(upstream.requests.last?.target == "/nested/y")
        #expect(upstream.requests.last?.header("authorization") == nil)
        #expect(proxy.standardError.contains("does not match the upstream"), "--check's warning, at start")
    }

    @Test func overlapsAndMisplacedKeysStopTheStartNamingTheirLines() throws {
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            upstream = http://127.0.0.1:9
            access_token = t
            [session a]
            upstream = http://127.0.0.1:9/a
            mount = /a
            access_token = u
            workers = 2
            """
        )
        let result = try ProxyProcess.run(["--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr == """
                Error: \(config):5: inject_hosts: 127.0.0.1:9 overlaps 127.0.0.1:9 of session default (\(config):2): a host gets one session's token, so each inject host belongs to one session
                Error: \(config):8: workers: is process-wide: set it outside any section, above the first [session …] line

                """
        )
        #expect(!result.stderr.contains("listening on"))
    }

    /// A file without sections keeps every shape it had: no session label, no `sessions`, no
    /// `session=` in the access log.
    @Test func aFileWithoutSectionsKeepsItsSurfaces() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["plain"])
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            access_log = stderr
            upstream = \(upstream.baseURL)
            access_token = plain
            """
        )
        let proxy = try ProxyProcess(["--config", config])
        defer { _ = proxy.stop() }
        let main = SocketAddress(
            ipAddress: "127.0.0.1",
            port: try tcpPort(of: try #require(proxy.waitUntilListening()))
        )!
        #expect(try httpRequest(main, "GET /plain HTTP/1.1\r\nHost: \(main)\r\n\r\n").status == 200)
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let adminAddress = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: String(admin)))!
        let status = try httpRequest(adminAddress, "GET /status HTTP/1.1\r\nHost: \(adminAddress)\r\n\r\n").text
        let metrics = try httpRequest(adminAddress, "GET /metrics HTTP/1.1\r\nHost: \(adminAddress)\r\n\r\n").text
        #expect(!status.contains("\"sessions\"") && !status.contains("\"default_session\""))
        #expect(!metrics.contains("session="))
        #expect(metrics.contains("\nbearer_proxy_token_generation 1\n"))
        #expect(metrics.contains("\nbearer_proxy_token_refreshes_total{result=\"ok\"} 0\n"))
        let unknown = try httpRequest(
            adminAddress,
            "POST /refresh?session=x HTTP/1.1\r\nHost: \(adminAddress)\r\nContent-Length: 0\r\n\r\n",
            method: .post
        )
        #expect(unknown.text == "bearer-proxy: there is no session 'x' (the sessions are default)\n")
        // The log, whole once the proxy stopped: the access line of /plain, and no session named.
        #expect(proxy.stop() == 0)
        #expect(proxy.standardError.contains("path=/plain"))
        #expect(!proxy.standardError.contains("session="))
    }
}

extension MockUpstream {
    func started() throws -> MockUpstream {
        try self.start()
        return self
    }
}

/// `bearer-proxy login --session NAME` and `logout --session NAME`: the section's own way to log
/// in and its own refresh_token_file; the other sessions' files are not touched.
@Suite struct NamedSessionLoginTests {
    @Test func loginAndLogoutActOnTheNamedSessionOnly() throws {
        var settings = MockTokenServer.Settings()
        settings.users = ["alice": "shop-password-e2e"]
        settings.expiresIn = 900
        let shop = MockTokenServer(group: e2eMockGroup, settings: settings)
        try shop.start()
        defer { shop.stop() }
        let directory = temporaryDirectory()
        let defaultFile = directory + "/default_refresh_token"
        let shopFile = directory + "/shop_refresh_token"
        try "rt-default-untouched\n".write(toFile: defaultFile, atomically: true, encoding: .utf8)
        let config = temporaryFile(
            """
            upstream = http://127.0.0.1:9
            token_url = http://127.0.0.1:9/token
            client_id = default-client
            refresh_token_file = \(defaultFile)

            [session shop]
            mount = /shop
            upstream = http://127.0.0.1:10
            token_format = json
            token_url = \(shop.jsonRefreshURL)
            login_url = \(shop.jsonLoginURL)
            logout_url = \(shop.jsonLogoutURL)
            username = alice
            password = ${SHOP_PASSWORD}
            refresh_token_file = \(shopFile)
            """
        )
        let environment = ["SHOP_PASSWORD": "shop-password-e2e"]
        let login = try ProxyProcess.run(["login", "--config", config, "--session", "shop"], environment: environment)
        #expect(login.status == 0, "\(login.stderr)")
        #expect(shop.loginCallCount == 1)
        let stored = try String(contentsOfFile: shopFile, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        #expect(stored.hasPrefix("rt-login-"))
        #expect(login.stdout.contains("stored in \(shopFile)"))
        #expect(try String(contentsOfFile: defaultFile, encoding: .utf8) == "rt-default-untouched\n")

        let logout = try ProxyProcess.run(["logout", "--config", config, "--session=shop"], environment: environment)
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(shop.revokedTokens == [stored])
        #expect(!FileManager.default.fileExists(atPath: shopFile))
        #expect(FileManager.default.fileExists(atPath: defaultFile), "the default session's file stays")
        for text in [login.stdout, login.stderr, logout.stdout, logout.stderr] {
            #expect(!text.contains(stored) && !text.contains("shop-password-e2e"))
        }

        let unknown = try ProxyProcess.run(
            ["login", "--config", config, "--session", "nope"],
            environment: environment
        )
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "Error: \(config): there is no [session nope] (the sessions are default, shop)\n")
        let noFile = temporaryFile(
            "upstream = http://127.0.0.1:9\n[session x]\nmount = /x\nupstream = http://127.0.0.1:10\n"
        )
        let missing = try ProxyProcess.run(["logout", "--config", noFile, "--session", "x"])
        #expect(
            missing.stderr
                == "Error: \(noFile):2: refresh_token_file: logout needs it in [session x] (where the refresh token is stored)\n"
        )
    }
}

/// `bearer-proxy env` and `run` export `BEARER_PROXY_URL_<NAME>` for each session with a listen or a
/// mount (upper-cased, `-` as `_`).
@Suite struct NamedSessionWrapTests {
    @Test func envExportsEachSessionsBaseURL() throws {
        let config = temporaryFile(
            """
            listen = 127.0.0.1:8141
            upstream = http://127.0.0.1:3000
            access_token = ${E2E_TOKEN}
            [session git-hub]
            mount = /github
            upstream = http://127.0.0.1:3001
            access_token = t1
            [session shop]
            listen = 127.0.0.1:8142
            upstream = http://api.shop.test
            access_token = t2
            [session proxied]
            inject_hosts = api.vendor.test
            access_token = t3
            """
        )
        let result = try ProxyProcess.run(["env", "--config", config], environment: ["E2E_TOKEN": "env-token-4d1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                export http_proxy='http://127.0.0.1:8141'
                export https_proxy='http://127.0.0.1:8141'
                export HTTP_PROXY='http://127.0.0.1:8141'
                export HTTPS_PROXY='http://127.0.0.1:8141'
                export NO_PROXY='localhost,::1'
                export no_proxy='localhost,::1'
                export BEARER_PROXY_URL='http://127.0.0.1:8141'
                export BEARER_PROXY_URL_GIT_HUB='http://127.0.0.1:8141/github'
                export BEARER_PROXY_URL_SHOP='http://127.0.0.1:8142'

                """
        )
        let picked = temporaryFile(
            "upstream = http://127.0.0.1:3000\n[session shop]\nlisten = 127.0.0.1:0\nupstream = http://127.0.0.1:3001\n"
        )
        let failed = try ProxyProcess.run(["env", "--config", picked])
        #expect(failed.status == 1)
        #expect(failed.stderr.hasPrefix("Error: \(picked):3: listen: port 0 is picked when the proxy starts"))
    }

    @Test func runGivesTheChildEachSessionsURLOnFreePorts() throws {
        let upstreams = try ["default", "a", "b"].map { name in
            let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["run-\(name)-token"])
            try upstream.start()
            return upstream
        }
        defer { upstreams.forEach { $0.stop() } }
        let directory = temporaryDirectory()
        let config = temporaryFile(
            """
            upstream = \(upstreams[0].baseURL)
            token_command = /bin/echo run-default-token
            ca_dir = \(directory)/ca
            [session a]
            mount = /a
            upstream = \(upstreams[1].baseURL)
            token_command = /bin/echo run-a-token
            [session b]
            listen = 127.0.0.1:1
            upstream = \(upstreams[2].baseURL)
            token_command = /bin/echo run-b-token
            """
        )
        let child = temporaryFile(
            """
            import os, urllib.request
            for name, path in [("BEARER_PROXY_URL", "/d"), ("BEARER_PROXY_URL_A", "/x"), ("BEARER_PROXY_URL_B", "/y")]:
                url = os.environ[name]
                print(name, url, urllib.request.urlopen(url + path).status)
            """,
            name: "child.py"
        )
        let run = try ProxyProcess(
            ["run", "--config", config, "--", "/usr/bin/python3", child],
            launcher: ["/usr/bin/setsid", "--fork", "--wait"]
        )
        #expect(run.waitForExit() == 0, "stderr: \(run.standardError)")
        let lines = run.standardOutput.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.map { $0.first ?? "" } == ["BEARER_PROXY_URL", "BEARER_PROXY_URL_A", "BEARER_PROXY_URL_B"])
        #expect(lines.allSatisfy { $0.last == "200" }, "\(run.standardOutput)")
        let main = try #require(lines.first?[1])
        #expect(main.hasPrefix("http://127.0.0.1:") && lines[1][1] == main + "/a")
        #expect(lines[2][1].hasPrefix("http://127.0.0.1:") && lines[2][1] != main && !lines[2][1].hasSuffix(":1"))
        for (upstream, (path, token)) in zip(upstreams, [("/d", "default"), ("/x", "a"), ("/y", "b")]) {
            #expect(upstream.requests.last?.target == path)
            #expect(upstream.requests.last?.header("authorization") == "Bearer run-\(token)-token")
        }
    }
}

/// tls_intercept with two sessions: the local CA's constraints permit every session's inject hosts,
/// and each intercepted tunnel's requests carry the token of the session whose host it is.
@Suite struct NamedSessionInterceptTests {
    @Test(.requires(.curl))
    func eachInterceptedHostGetsItsSessionsToken() throws {
        let fixtures = InterceptTunnelBinaryTests.fixtures
        let tls = try TLSContext.server(
            certificateChainFile: fixtures.appendingPathComponent("server.pem").path,
            privateKeyFile: fixtures.appendingPathComponent("server.key").path
        )
        let apis = try ["default", "a"].map { name in
            let authority = MockTokenAuthority(prefix: "\(name)-access-")
            let tokens = MockTokenServer(group: e2eMockGroup, authority: authority)
            try tokens.start()
            let upstream = MockUpstream(group: e2eMockGroup, authority: authority, tls: tls)
            try upstream.start()
            return (tokens, upstream)
        }
        defer {
            for (tokens, upstream) in apis {
                tokens.stop()
                upstream.stop()
            }
        }
        let base = temporaryDirectory()
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            ca_file = \(fixtures.appendingPathComponent("ca.pem").path)
            tls_intercept = on
            ca_dir = \(base)/ca
            upstream = https://localhost:\(apis[0].1.port)
            token_url = \(apis[0].0.url)
            client_id = d
            [session a]
            upstream = https://127.0.0.1:\(apis[1].1.port)
            token_url = \(apis[1].0.url)
            client_id = a
            """
        )
        let proxy = try ProxyProcess(["--config", config])
        defer {
            proxy.signal(SIGTERM)
            _ = proxy.waitForExit()
        }
        let address = try #require(proxy.waitUntilListening())
        for (name, url) in [
            ("default", "https://localhost:\(apis[0].1.port)/d"), ("a", "https://127.0.0.1:\(apis[1].1.port)/a"),
        ] {
            let result = try InterceptTunnelBinaryTests.run(
                [
                    InterceptTunnelBinaryTests.curl, "-sS", "--proxy", "http://\(address)", "--cacert",
                    base + "/ca/ca.pem", "-w", "\n%{http_code}", url,
                ],
                environment: [:]
            )
            #expect(result.status == 0, "\(name): curl: \(result.standardError)")
            #expect(result.standardOutput.hasSuffix("\n200"), "\(name): \(result.standardOutput)")
        }
        #expect(apis[0].1.requests.last?.header("authorization") == "Bearer default-access-1")
        #expect(apis[1].1.requests.last?.header("authorization") == "Bearer a-access-1")
        #expect(apis[1].1.requests.last?.target == "/a")
    }
}
