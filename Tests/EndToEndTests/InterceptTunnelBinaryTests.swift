import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// The built binary with tls_intercept on, driven by real clients: curl (`--proxy`, `--cacert`) and
/// Python's requests (`https_proxy`, `REQUESTS_CA_BUNDLE` = `bearer-proxy ca --bundle`), in front of
/// an https mock API on localhost whose tokens come from a mock token server.
@Suite struct InterceptTunnelBinaryTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/tls")
    static var curl: String { ExternalTool.curl.program }
    static var python: String { ExternalTool.pythonRequests.program }

    /// An https mock API's context: the test certificate for localhost and 127.0.0.1.
    static func localhostServerTLS() throws -> TLSContext {
        try TLSContext.server(
            certificateChainFile: Self.fixtures.appendingPathComponent("server.pem").path,
            privateKeyFile: Self.fixtures.appendingPathComponent("server.key").path
        )
    }

    /// A running proxy, its mocks and its folder.
    final class Setup {
        let authority = MockTokenAuthority()
        let tokenServer: MockTokenServer
        let upstream: MockUpstream
        let base: String
        let config: String
        let proxy: ProxyProcess
        let address: String

        var caDirectory: String { self.base + "/ca" }
        var rootFile: String { self.caDirectory + "/ca.pem" }
        var url: String { "https://localhost:\(self.upstream.port)" }

        /// `extra`: lines added to the config.
        init(_ extra: String = "") throws {
            var settings = MockTokenServer.Settings()
            settings.clientID = "proxy-client"
            settings.clientSecret = "e2e-secret"
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority, settings: settings)
            try self.tokenServer.start()
            let tls = try InterceptTunnelBinaryTests.localhostServerTLS()
            self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority, tls: tls)
            try self.upstream.start()
            self.base = try ScratchSpace.newDirectory("intercept")
            self.config = self.base + "/proxy.conf"
            let text = """
                listen = 127.0.0.1:0
                admin_listen = 127.0.0.1:0
                upstream = https://localhost:\(self.upstream.port)
                ca_file = \(InterceptTunnelBinaryTests.fixtures.appendingPathComponent("ca.pem").path)
                tls_intercept = on
                ca_dir = \(self.base)/ca
                token_url = \(self.tokenServer.url)
                grant_type = client_credentials
                client_id = proxy-client
                client_secret = e2e-secret
                \(extra)

                """
            _ = FileManager.default.createFile(atPath: self.config, contents: Data(text.utf8))
            self.proxy = try ProxyProcess(["--config", self.config])
            self.address = try #require(self.proxy.waitUntilListening())
        }

        /// The handshakes of intercepted tunnels that failed, from /metrics (the admin port is the
        /// start line's, written before the ready line).
        func handshakeFailures() -> Int? {
            guard let admin = word(startingWith: "admin=", in: self.proxy.standardError)?.dropFirst(6),
                let port = try? tcpPort(of: String(admin)),
                let metrics = try? httpRequest(
                    SocketAddress(ipAddress: "127.0.0.1", port: port)!,
                    "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
                ).text
            else { return nil }
            let name = "bearer_proxy_intercept_handshake_failures_total "
            return metrics.split(separator: "\n").first { $0.hasPrefix(name) }.flatMap { Int($0.dropFirst(name.count)) }
        }

        deinit {
            self.proxy.signal(SIGTERM)
            _ = self.proxy.waitForExit()
            self.upstream.stop()
            self.tokenServer.stop()
            try? FileManager.default.removeItem(atPath: self.base)
        }
    }

    /// Runs a tool with exactly `environment` (no inherited proxy or CA variables), bounded in time.
    static func run(_ arguments: [String], environment: [String: String]) throws -> ProgramOutcome {
        let base = ["PATH": "/usr/bin:/bin", "HOME": try ScratchSpace.directory()]
        return try runProgram(
            arguments,
            environment: environment.merging(base) { given, _ in given },
            timeout: .seconds(30)
        )
    }

    /// ALPN inside the tunnel: `h2` chosen by a client that offers it (curl --http2 offers `h2,
    /// http/1.1`), each stream an exchange to the tunnel's host with the token; with http2 = off the
    /// proxy selects `http/1.1` and the same curl speaks HTTP/1.1.
    @Test(.requires(.curl), arguments: [true, false])
    func curlOfferingHTTP2InsideAnInterceptedTunnelGetsWhatHTTP2Selects(http2: Bool) throws {
        let setup = try Setup(http2 ? "" : "http2 = off")
        let result = try Self.run(
            [
                Self.curl, "-sS", "--http2", "--proxy", "http://\(setup.address)", "--cacert", setup.rootFile,
                "-w", "\n%{http_code} %{http_version}", "\(setup.url)/v1/items",
            ],
            environment: [:]
        )
        #expect(result.status == 0, "curl: \(result.standardError)")
        #expect(result.standardOutput.hasSuffix(http2 ? "\n200 2" : "\n200 1.1"), "\(result.standardOutput)")
        let seen = try #require(setup.upstream.requests.last)
        #expect(seen.target == "/v1/items")
        #expect(seen.header("authorization")?.hasPrefix("Bearer mock-access-") == true)
    }

    @Test(.requires(.curl))
    func curlThroughAnInterceptedTunnelGetsTheToken() throws {
        let setup = try Setup()
        let result = try Self.run(
            [
                Self.curl, "-sS", "--proxy", "http://\(setup.address)", "--cacert", setup.rootFile,
                "-w", "\n%{http_code}", "\(setup.url)/v1/items",
            ],
            environment: [:]
        )
        #expect(result.status == 0, "curl: \(result.standardError)")
        #expect(result.standardOutput.hasSuffix("\n200"))
        let seen = try #require(setup.upstream.requests.last)
        #expect(seen.target == "/v1/items")
        #expect(seen.header("authorization")?.hasPrefix("Bearer mock-access-") == true)
    }

    /// curl says only "unable to get local issuer certificate"; the proxy's line says what to do.
    @Test(.requires(.curl))
    func curlWithoutTheCAGetsNothingForwardedAndTheProxySaysWhatToTrust() throws {
        let setup = try Setup()
        let result = try Self.run(
            [Self.curl, "-sS", "--proxy", "http://\(setup.address)", "\(setup.url)/secret"],
            environment: [:]
        )
        #expect(result.status == 60, "curl's certificate failure: \(result.standardError)")
        #expect(setup.upstream.requests.allSatisfy { $0.target != "/secret" }, "nothing may reach the upstream")
        // The refused handshake is counted once it is logged; the line is read once the proxy stopped.
        #expect(waitUntil { setup.handshakeFailures() == 1 })
        #expect(setup.proxy.stop() == 0)
        let line = "client refused the certificate of an intercepted tunnel: it must trust the proxy's CA (ca.pem)"
        #expect(setup.proxy.standardError.contains(line), "stderr: \(setup.proxy.standardError)")
        let logged = setup.proxy.standardError.split(separator: "\n").first { $0.contains(line) } ?? ""
        #expect(logged.contains("host=localhost"))
        #expect(logged.contains(setup.rootFile))
        #expect(logged.contains("bearer-proxy ca"))
    }

    @Test(.requires(.pythonRequests))
    func pythonRequestsWithTheBundleGetsTheToken() throws {
        let setup = try Setup()
        let bundle = try ProxyProcess.run(["ca", "--bundle", "--config", setup.config])
        #expect(bundle.status == 0, "bearer-proxy ca --bundle: \(bundle.stderr)")
        let bundlePath = bundle.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let script = """
            import requests, sys
            response = requests.get(sys.argv[1] + "/py/items", timeout=20)
            print(response.status_code, response.json()["target"])
            """
        let result = try Self.run(
            [Self.python, "-c", script, setup.url],
            environment: ["https_proxy": "http://\(setup.address)", "REQUESTS_CA_BUNDLE": bundlePath]
        )
        #expect(result.status == 0, "python: \(result.standardError)")
        #expect(result.standardOutput == "200 /py/items\n")
        #expect(setup.upstream.requests.last?.header("authorization")?.hasPrefix("Bearer mock-access-") == true)
    }
}
