import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

let e2eMockGroup = EventLoopGroup(count: 1, name: "e2e-mocks")

@Suite struct BinaryTests {
    @Test func binaryIsBuilt() {
        #expect(
            FileManager.default.isExecutableFile(atPath: ProxyProcess.binaryURL.path),
            "run the tests with 'swift test', which builds bearer-proxy"
        )
    }

    @Test func proxiesWithAStaticTokenAndStopsOnSIGTERM() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["e2e-token-abc"])
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile(
            "upstream = \(upstream.baseURL)\naccess_token = ${E2E_TOKEN}\nlisten = 127.0.0.1:0\n"
        )
        let proxy = try ProxyProcess(["--config", config], environment: ["E2E_TOKEN": "e2e-token-abc"])
        let listening = try #require(proxy.waitUntilListening())
        let address = try #require(try? ListenAddressSpec.parse(listening))
        guard case .hostPort(_, let port) = address else { Issue.record("not a TCP address: \(listening)"); return }
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET /e2e HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 200)
        #expect(upstream.requests.last?.header("authorization") == "Bearer e2e-token-abc")
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit() == 0)
        #expect(!proxy.standardError.contains("e2e-token-abc"), "the token reached stderr")
        #expect(proxy.standardError.contains(" io=io_uring "), "io_uring is the default I/O")
    }

    @Test func ioEpollIsHonoured() throws {
        let config = temporaryFile("upstream = http://127.0.0.1:9\nlisten = 127.0.0.1:0\nio = epoll\n")
        let epoll = try ProxyProcess(["--config", config])
        #expect(epoll.waitUntilListening() != nil)
        epoll.signal(SIGTERM)
        #expect(epoll.waitForExit() == 0)
        #expect(epoll.standardError.contains(" io=epoll "))
        #expect(!epoll.standardError.contains("io_uring is not available"))
    }

    @Test func stopsOnSIGINTAndRemovesItsUnixSocket() throws {
        let path = try ScratchSpace.newPath("e2e.sock")
        let proxy = try ProxyProcess(["--upstream", "http://127.0.0.1:9", "--listen", "unix:\(path)"])
        #expect(proxy.waitUntilListening() == "unix:\(path)")
        #expect(FileManager.default.fileExists(atPath: path))
        proxy.signal(SIGINT)
        #expect(proxy.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func checkPrintsTheEffectiveConfigurationWithSecretsMasked() throws {
        let config = temporaryFile(
            "upstream = https://api.example.com/v2\naccess_token = sk-live-supersecret\nworkers = 3\n"
        )
        let result = try ProxyProcess.run(["--config", config, "--check", "--listen", "127.0.0.1:9999"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("access_token = <redacted>\n"))
        #expect(result.stdout.contains("listen = 127.0.0.1:9999\n"))
        #expect(result.stdout.contains("upstream = https://api.example.com/v2\n"))
        #expect(result.stdout.contains("workers = 3\n"))
        #expect(!result.stdout.contains("supersecret") && !result.stderr.contains("supersecret"))
    }

    @Test func badConfigurationExitsOneNamingFileLineAndKey() throws {
        let config = temporaryFile("upstream = http://127.0.0.1:1\n\nclient_idle_timeout = soon\n")
        let result = try ProxyProcess.run(["--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(config):3: client_idle_timeout: invalid duration 'soon' (expected e.g. 500ms, 30s, 5m)\n"
        )
    }

    @Test func missingConfigFileExitsOne() throws {
        let result = try ProxyProcess.run(["--config", "/nonexistent/proxy.conf"])
        #expect(result.status == 1)
        #expect(
            result.stderr == "Error: /nonexistent/proxy.conf: cannot read the config file: No such file or directory\n"
        )
    }

    @Test func portInUseExitsOne() throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        let port = Socket.localAddress(fd)!.port!
        let result = try ProxyProcess.run(["--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: cannot listen on 127.0.0.1:\(port): Address already in use (another program holds the port: pick another with --listen, or --listen 127.0.0.1:0 for any free one)\n"
        )
    }

    /// An unknown flag of the proxy or of a subcommand: exit 1, the flag it was likely meant to be,
    /// the usage line and where help is.
    @Test func unknownOptionExitsOneWithUsageAndTheFlagMeant() throws {
        let result = try ProxyProcess.run(["--chek"])
        #expect(result.status == 1)
        #expect(
            result.stderr == """
                Error: Unknown option '--chek' (did you mean '--check'?)
                Usage: bearer-proxy [--config <file>] [<options>]
                  See 'bearer-proxy --help' for more information.

                """
        )
        let login = try ProxyProcess.run(["login", "--sesion", "github"])
        #expect(login.status == 1)
        #expect(
            login.stderr == """
                Error: Unknown option '--sesion' (did you mean '--session'?)
                Usage: bearer-proxy login [<url>] [--config <file>] [--session <name>] [--device] [--no-browser] [--scope <scope>] [--print]
                  See 'bearer-proxy login --help' for more information.

                """
        )
    }

    @Test func helpAndVersionGoToStdout() throws {
        let help = try ProxyProcess.run(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: A local authenticating HTTP proxy."))
        let version = try ProxyProcess.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout == "bearer-proxy \(bearerProxyVersion) (commit \(try BuildCommitTests.headCommit()))\n")
    }
}

@Suite struct DemoTests {
    @Test func demoServesWhoamiWithAFetchedToken() throws {
        let proxy = try ProxyProcess(["--demo", "--listen", "127.0.0.1:0"])
        let listening = try #require(proxy.waitUntilListening())
        let port = try tcpPort(of: listening)
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        let response = try httpRequest(address, "GET /whoami HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.text.contains("token generation 1"))

        // The demo serves the admin endpoints on a loopback port of its own, which the start line
        // (written before the ready line) names.
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let statusResponse = try Self.get("http://\(admin)/status")
        #expect(statusResponse.status == 200)
        #expect(statusResponse.text.contains("\"token_generation\" : 1"))
        let metricsResponse = try Self.get("http://\(admin)/metrics")
        #expect(metricsResponse.status == 200)
        #expect(metricsResponse.text.contains("bearer_proxy_token_generation 1\n"))
        #expect(proxy.stop() == 0)

        // Its stderr, whole now: the refresh's log line, and the banner (written by the main thread
        // once the server listens, apart from the log), which names the endpoints that answered above
        // and ends with "# refresh now".
        let stderr = proxy.standardError
        #expect(stderr.contains("token refreshed generation=1 trigger=startup"))
        #expect(stderr.contains("curl -i http://"), "the demo's banner")
        #expect(stderr.contains("# refresh now"), "the demo's banner")
        #expect(Self.url(after: "curl -s ", endingWith: "/status", in: stderr) == "http://\(admin)/status")
        #expect(Self.url(after: "curl -s ", endingWith: "/metrics", in: stderr) == "http://\(admin)/metrics")
        #expect(!proxy.standardError.contains("mock-access-1"), "a token reached the log")
        #expect(!proxy.standardError.contains("demo-secret"))
    }
}

extension DemoTests {
    /// The `http://…` URL in `text` that follows `prefix` and ends with `suffix`.
    static func url(after prefix: String, endingWith suffix: String, in text: String) -> String? {
        text.components(separatedBy: prefix).dropFirst().map { $0.prefix { !$0.isWhitespace } }
            .first { $0.hasPrefix("http://") && $0.hasSuffix(suffix) }.map(String.init)
    }

    static func get(_ url: String) throws -> BlockingHTTPClient.Response {
        let authority = String(url.dropFirst("http://".count).prefix { $0 != "/" })
        let path = String(url.dropFirst("http://".count + authority.count))
        let port = Int(authority.split(separator: ":").last ?? "") ?? 0
        return try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET \(path) HTTP/1.1\r\nHost: \(authority)\r\n\r\n"
        )
    }

    /// The demo listens on 8080 by default: when something holds it, the error says how to get a free port.
    @Test func aDemoOnATakenPortSuggestsAFreeOne() throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        let port = Socket.localAddress(fd)!.port!
        let result = try ProxyProcess.run(["--demo", "--listen", "127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: cannot listen on 127.0.0.1:\(port): Address already in use (another program holds the port: pick another with --listen, or --listen 127.0.0.1:0 for any free one)\n"
        )
    }

    @Test func demoCheckPrintsTheDemosEffectiveConfiguration() throws {
        let result = try ProxyProcess.run(["--demo", "--check"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        for line in [
            "upstream = http://127.0.0.1:", "token_url = http://127.0.0.1:", "grant_type = client_credentials\n",
            "client_id = demo-client\n", "client_secret = <redacted>\n", "admin_listen = 127.0.0.1:0\n",
            "inject_hosts = 127.0.0.1:",
        ] {
            #expect(result.stdout.contains(line), "missing \(line)")
        }
        #expect(!result.stdout.contains("(not set)\nupstream"), "upstream is not set")
        #expect(!result.stdout.contains("demo-secret"))
        #expect(result.stdout.hasSuffix("configuration OK\n"))
    }
}

@Suite struct BinarySessionTests {
    @Test func refreshesThroughTheConfiguredTokenEndpointAndKeepsSecretsOutOfStderr() throws {
        let authority = MockTokenAuthority()
        var settings = MockTokenServer.Settings()
        settings.clientID = "e2e-client"
        settings.clientSecret = "e2e-client-secret-xyz"
        let tokenServer = MockTokenServer(group: e2eMockGroup, authority: authority, settings: settings)
        try tokenServer.start()
        defer { tokenServer.stop() }
        let upstream = MockUpstream(group: e2eMockGroup, authority: authority)
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            upstream = \(upstream.baseURL)
            token_url = \(tokenServer.url)
            client_id = e2e-client
            client_secret = ${E2E_CLIENT_SECRET}
            access_token = stale-e2e-token
            log_level = debug
            """
        )
        let proxy = try ProxyProcess(["--config", config], environment: ["E2E_CLIENT_SECRET": "e2e-client-secret-xyz"])
        let listening = try #require(proxy.waitUntilListening())
        let port = try tcpPort(of: listening)
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET /e2e HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 200)
        #expect(tokenServer.callCount == 1)
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit() == 0)
        let stderr = proxy.standardError
        #expect(stderr.contains("token refreshed"))
        for secret in ["e2e-client-secret-xyz", "stale-e2e-token", "mock-access-1"] {
            #expect(!stderr.contains(secret), "\(secret) reached stderr")
        }
    }

    /// A static token the API refuses cannot be refreshed: the 401s pass through, one warning says
    /// so and which keys would give the proxy a way to new tokens, and /status shows the refusal.
    @Test func aStaticTokenTheAPIRefusesIsWarnedOfOnceAndShownInStatus() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["the-token-it-wants"])
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(upstream.baseURL)
            access_token = ${E2E_TOKEN}
            """
        )
        let proxy = try ProxyProcess(["--config", config], environment: ["E2E_TOKEN": "e2e-revoked-token"])
        let port = try tcpPort(of: try #require(proxy.waitUntilListening()))
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let adminAddress = SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: String(admin)))!
        func status() throws -> [String: Any] {
            let response = try httpRequest(adminAddress, "GET /status HTTP/1.1\r\nHost: \(adminAddress)\r\n\r\n")
            return (try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        }
        #expect(try status()["state"] as? String == "ready")
        for index in 1...3 {
            let response = try httpRequest(
                SocketAddress(ipAddress: "127.0.0.1", port: port)!,
                "GET /refused-\(index) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
            )
            #expect(response.status == 401, "the API's own answer passes through")
        }
        #expect(upstream.requests.count == 3)
        let shown = try status()
        #expect(shown["state"] as? String == "rejected")
        #expect(
            shown["failure"] as? String
                == "the upstream answered 401 to the access token, and nothing can refresh it: \(staticTokenAdvice)"
        )
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit() == 0)
        let warnings = proxy.standardError.split(separator: "\n").filter { $0.contains(" warn ") }
        #expect(warnings.count == 1, "one warning for the token, not one per 401: \(warnings)")
        let warning = String(warnings.first ?? "")
        #expect(warning.contains("warn the upstream refused the access token, and nothing can refresh it"))
        #expect(warning.contains("generation=1 refresh_on=401,grpc-unauthenticated "))
        #expect(warning.contains("fix=\"\(staticTokenAdvice)\""))
        #expect(!proxy.standardError.contains("e2e-revoked-token"), "the token reached stderr")
    }
}

/// What the proxy tells a person whose static token was refused: the keys that would let it get new ones.
let staticTokenAdvice =
    "replace access_token, or let the proxy get new tokens: set token_url (with refresh_token_file, refresh_token, client_id and client_secret, or username and password) or token_command"

@Suite struct BinaryOperationsTests {
    /// The proxy's first listen address is TCP (`listen`'s first item): the address returned.
    func start(
        _ extra: String = "",
        listen: String = "127.0.0.1:0",
        environment: [String: String] = [:]
    ) throws -> (ProxyProcess, SocketAddress, MockUpstream) {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["ops-token"])
        try upstream.start()
        let config = temporaryFile(
            "listen = \(listen)\nupstream = \(upstream.baseURL)\naccess_token = ops-token\n\(extra)\n"
        )
        let proxy = try ProxyProcess(["--config", config], environment: environment)
        let listening = try #require(proxy.waitUntilListening())
        guard case .hostPort(_, let port) = try ListenAddressSpec.parse(listening) else {
            throw BlockingHTTPClient.ClientError.closedBeforeResponse
        }
        return (proxy, SocketAddress(ipAddress: "127.0.0.1", port: port)!, upstream)
    }

    @Test func sigtermLetsInFlightRequestsFinishThenExitsZero() throws {
        let (proxy, address, upstream) = try self.start("shutdown_timeout = 10s")
        defer { upstream.stop() }
        let client = try BlockingHTTPClient(connectingTo: address)
        client.send("GET /slow/3000 HTTP/1.1\r\nHost: \(address)\r\n\r\n")
        // In flight: at the upstream, answered 3 s later.
        #expect(waitUntil { upstream.requests.contains { $0.target == "/slow/3000" } })
        proxy.signal(SIGTERM)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "slow\n")
        #expect(response.header("connection") == "close")
        #expect(proxy.waitForExit() == 0)
        #expect(proxy.standardError.contains("shutting down"))
        #expect(throws: BlockingHTTPClient.ClientError.self) {
            try httpRequest(address, "GET / HTTP/1.1\r\nHost: \(address)\r\n\r\n")
        }
    }

    /// Access log lines share stderr with the log: every line of the stream has a level where the
    /// others have theirs (the second field), so one filter or parser reads them all.
    @Test func everyLineOnStderrHasALevelAccessLinesIncluded() throws {
        let (proxy, address, upstream) = try self.start("access_log = stderr")
        defer { upstream.stop() }
        #expect(try httpRequest(address, "GET /levels HTTP/1.1\r\nHost: \(address)\r\n\r\n").status == 200)
        // Answered: its access line is read from the stopped proxy's whole stderr.
        #expect(proxy.stop() == 0)
        let lines = proxy.standardError.split(separator: "\n")
        let access = lines.filter { $0.contains(" path=/levels ") }
        #expect(access.count == 1)
        #expect(access.first?.split(separator: " ").dropFirst().first == "info")
        let levels: Set<Substring> = ["debug", "info", "warn", "error"]
        for line in lines {
            #expect(line.split(separator: " ").dropFirst().first.map(levels.contains) == true, "\(line)")
        }
    }

    /// Draining, the proxy closes its listening sockets: a new client is refused at once (and can go
    /// elsewhere) instead of waiting in a backlog nobody accepts from until its own timeout.
    @Test func refusesNewConnectionsAtOnceWhileDraining() throws {
        let path = try ScratchSpace.newPath("e2e.sock")
        let (proxy, address, upstream) = try self.start("shutdown_timeout = 60s", listen: "127.0.0.1:0, unix:\(path)")
        defer { upstream.stop() }
        let unix = SocketAddress.unix(path: path)
        let inFlight = try BlockingHTTPClient(connectingTo: unix)
        inFlight.send("GET /hang HTTP/1.1\r\nHost: api\r\n\r\n")
        #expect(waitUntil { upstream.requests.contains { $0.target == "/hang" } })
        proxy.signal(SIGTERM)
        #expect(waitUntil { Self.refuses(address) }, "a new TCP connection was not refused while draining")
        #expect(waitUntil { Self.connectError(unix) == .connectFailed(ENOENT) }, "the unix socket file is still there")
        #expect(proxy.process.isRunning, "still draining: the in-flight request has not finished")
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit(timeout: .seconds(10)) != nil)
    }

    /// Whether a new TCP connection to `address` is refused: what a client sees of a drain.
    static func refuses(_ address: SocketAddress) -> Bool {
        if case .connectFailed(ECONNREFUSED) = Self.connectError(address) { return true }
        return false
    }

    /// How connecting to `address` fails; nil when it connects.
    static func connectError(_ address: SocketAddress) -> BlockingHTTPClient.ClientError? {
        do throws(BlockingHTTPClient.ClientError) {
            _ = try BlockingHTTPClient(connectingTo: address, timeout: .seconds(2))
            return nil
        } catch {
            return error
        }
    }

    @Test func aSecondSignalExitsAtOnce() throws {
        let (proxy, address, upstream) = try self.start("shutdown_timeout = 60s")
        defer { upstream.stop() }
        let client = try BlockingHTTPClient(connectingTo: address)
        client.send("GET /hang HTTP/1.1\r\nHost: \(address)\r\n\r\n")
        #expect(waitUntil { upstream.requests.contains { $0.target == "/hang" } })
        proxy.signal(SIGINT)
        // The drain has started when a new client is refused.
        #expect(waitUntil { Self.refuses(address) })
        #expect(proxy.process.isRunning, "the first signal waits for the in-flight request")
        proxy.signal(SIGINT)
        #expect(proxy.waitForExit(timeout: .seconds(5)) != nil)
        #expect(proxy.standardError.contains("second signal"))
    }

    @Test func sighupRereadsTheRefreshTokenFile() throws {
        let authority = MockTokenAuthority()
        var settings = MockTokenServer.Settings()
        settings.refreshTokens = ["rt-second"]
        let tokenServer = MockTokenServer(group: e2eMockGroup, authority: authority, settings: settings)
        try tokenServer.start()
        defer { tokenServer.stop() }
        let upstream = MockUpstream(group: e2eMockGroup, authority: authority)
        try upstream.start()
        defer { upstream.stop() }
        let tokenFile = temporaryFile("rt-first\n", name: "refresh_token")
        let config = temporaryFile(
            "listen = 127.0.0.1:0\nupstream = \(upstream.baseURL)\ntoken_url = \(tokenServer.url)\nrefresh_token_file = \(tokenFile)\n"
        )
        let proxy = try ProxyProcess(["--config", config])
        let listening = try #require(proxy.waitUntilListening())
        let port = try tcpPort(of: listening)
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        // rt-first is refused at start; a request meanwhile waits for that answer, and gets the 401.
        #expect(waitUntil { tokenServer.answeredCallCount >= 1 })
        #expect(try httpRequest(address, "GET / HTTP/1.1\r\nHost: \(listening)\r\n\r\n").status == 401)
        // The user logs in elsewhere and drops a fresh refresh token in, then tells the proxy.
        try "rt-second\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        proxy.signal(SIGHUP)
        // The token server is called with the new token: by SIGHUP's refresh, or by the proxy's
        // watcher of the file if it noticed first (SIGHUP then joins that refresh).
        #expect(waitUntil { tokenServer.answeredCallCount >= 2 })
        #expect(try httpRequest(address, "GET / HTTP/1.1\r\nHost: \(listening)\r\n\r\n").status == 200)
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit() == 0)
        #expect(!proxy.standardError.contains("rt-second") && !proxy.standardError.contains("rt-first"))
    }
}

@Suite struct DescriptorExhaustionTests {
    /// Out of file descriptors, accept fails with EMFILE again and again; the proxy must back off
    /// instead of spinning an event loop at 100% CPU, and serve again once descriptors free up.
    @Test func outOfDescriptorsTheProxyDoesNotSpinAndRecovers() throws {
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile("listen = 127.0.0.1:0\nupstream = \(upstream.baseURL)\nworkers = 1\n")
        let shell = try ProxyProcess(
            ["--config", config],
            environment: [:],
            launcher: ["/bin/sh", "-c", "ulimit -n 48 && exec \"$0\" \"$@\""]
        )
        let listening = try #require(shell.waitUntilListening())
        let port = try tcpPort(of: listening)
        let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
        var held: [BlockingHTTPClient] = []
        for _ in 0..<80 {
            if let client = try? BlockingHTTPClient(connectingTo: address, timeout: .seconds(2)) { held.append(client) }
        }
        // Out of descriptors: all 48 are open, and every accept of the clients still waiting in the
        // backlog fails from now on.
        let pid = shell.process.pid
        #expect(waitUntil { Self.openDescriptors(pid) == 48 }, "\(Self.openDescriptors(pid)) descriptors open")
        func loop() -> ProcessThread? { ProcessThread.all(of: pid).first { $0.name == "bearer-loop-0" } }
        let waits = try #require(loop()).waits
        // A loop that tried again at once would never wait again (it would give up the CPU only when
        // the scheduler took it); backing off, it waits between its tries, again and again.
        #expect(
            waitUntil { (loop()?.waits ?? 0) >= waits + 5 },
            "the loop stopped waiting: \(String(describing: loop()))"
        )
        held.removeAll()
        #expect(
            waitUntil { (try? httpRequest(address, "GET /again HTTP/1.1\r\nHost: \(listening)\r\n\r\n").status) == 200 }
        )
        #expect(shell.stop() == 0)
        #expect(shell.standardError.contains(" warn accept failed; pausing accepts briefly "))
    }

    /// How many descriptors process `pid` holds open.
    static func openDescriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count ?? 0
    }
}

/// The port of a `listening on HOST:PORT` address; a unix socket address fails the test.
func tcpPort(of listening: String) throws -> Int {
    guard case .hostPort(_, let port) = try ListenAddressSpec.parse(listening) else {
        throw TestFailure(description: "expected a TCP address, got \(listening)")
    }
    return port
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
}
