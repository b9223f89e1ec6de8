import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `proxy.conf.example` through the binary: it passes `--check` as it stands and is a working proxy
/// once its upstream is real.
@Suite struct ExampleConfigProcessTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("proxy.conf.example").path

    /// In a clean environment with API_TOKEN exported, as its first lines say: it passes, and the
    /// only warning is the upstream placeholder left to replace.
    @Test func theRepositorysExampleConfigPassesCheckAsItStands() throws {
        let result = try ProxyProcess.run(
            ["--check", "--config", Self.example],
            environment: ["PATH": "/usr/bin:/bin", "API_TOKEN": "example-token-1"],
            inheritsEnvironment: false
        )
        #expect(result.status == 0, "stderr: \(result.stderr)")
        for line in ["access_token = <redacted>", "token_url = (not set)", "token_format = form", "login_timeout = 5m"]
        {
            #expect(result.stdout.contains("\n\(line)\n"), "missing \(line)")
        }
        #expect(result.stdout.hasSuffix("configuration OK (1 warning)\n"))
        #expect(
            result.stderr
                == "Warning: \(Self.example):19: upstream: api.example.com is a placeholder (example.com is reserved for documentation): put the real host here\n"
        )
        #expect(!result.stdout.contains("example-token-1") && !result.stderr.contains("example-token-1"))

        let unset = try ProxyProcess.run(["--check", "--config", Self.example], inheritsEnvironment: false)
        #expect(unset.status == 1)
        #expect(unset.stderr == "Error: \(Self.example):26: access_token: environment variable API_TOKEN is not set\n")
    }

    /// The example with only its upstream replaced is a working proxy: the token goes upstream, and a
    /// token the API rejects comes back as the API's 401 at once (the old example's token_url sent
    /// the proxy to auth.example.com first: a 502 after the refresh timed out).
    @Test func theExampleWithARealUpstreamProxiesWithTheStaticToken() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["example-good-token"])
        try upstream.start()
        defer { upstream.stop() }
        for (token, status) in [("example-good-token", 200), ("example-revoked-token", 401)] {
            let proxy = try ProxyProcess(
                ["--config", Self.example, "--upstream", upstream.baseURL, "--listen", "127.0.0.1:0"],
                environment: ["API_TOKEN": token]
            )
            let port = try tcpPort(of: try #require(proxy.waitUntilListening()))
            let response = try httpRequest(
                SocketAddress(ipAddress: "127.0.0.1", port: port)!,
                "GET /items HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
            )
            #expect(response.status == status, "\(response.text)")
            #expect(upstream.requests.last?.header("authorization") == "Bearer \(token)")
            proxy.signal(SIGTERM)
            #expect(proxy.waitForExit() == 0)
            #expect(proxy.standardError.contains("tokens=\"static access_token\""))
            let start = proxy.standardError.components(separatedBy: "listening on")[0]
            #expect(!start.contains(" warn "), "a warning at start: \(start)")
            // A refused static token is said once, with the keys that would refresh it (issue 17.8).
            #expect(proxy.standardError.contains("nothing can refresh it") == (status == 401))
        }
    }
}

/// `--check` and start-up against the binary: every error of a file in one run, one line each, exit 1;
/// warnings for settings that work but surely not as meant, exit 0 (docs/configuration.md, Configuration).
@Suite struct CheckTests {
    @Test func reportsEveryErrorOfTheFileOneLineEachAndExitsOne() throws {
        let config = temporaryFile(
            """
            upstream = https://api.internal/v2
            token_url = auth.internal/oauth/token
            client_id = my-client
            client_idle_timeout = soon
            workers = many
            upstrem = https://api.internal
            listen 127.0.0.1:1
            access_token = ${E2E_NOT_SET_ANYWHERE}
            refresh_token = inline-refresh-secret
            refresh_token_file = /tmp/refresh_token
            max_header_bytes = 10

            """
        )
        let result = try ProxyProcess.run(["--check", "--config", config, "--listen", "127.0.0.1"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty, "no report of a configuration that does not load")
        #expect(
            result.stderr.split(separator: "\n").map(String.init) == [
                "Error: \(config):2: token_url: 'auth.internal/oauth/token' must start with http:// or https:// (expected e.g. https://auth.example.com/oauth/token)",
                "Error: \(config):4: client_idle_timeout: invalid duration 'soon' (expected e.g. 500ms, 30s, 5m)",
                "Error: \(config):5: workers: expected a number from 1 to 256, got 'many'",
                "Error: \(config):6: upstrem: unknown key (did you mean 'upstream'?)",
                "Error: \(config):7: expected 'key = value' (the line is not shown: it may hold a secret)",
                "Error: \(config):8: access_token: environment variable E2E_NOT_SET_ANYWHERE is not set",
                "Error: \(config):10: refresh_token_file: set either refresh_token or refresh_token_file, not both",
                "Error: \(config):11: max_header_bytes: invalid size '10' (expected e.g. 64KiB, 1MiB, at least 1024 bytes)",
                "Error: command line (--listen): listen: '127.0.0.1' has no port (expected HOST:PORT, [IPv6]:PORT or unix:/path)",
            ]
        )
        #expect(!result.stderr.contains("inline-refresh-secret"))
        // Starting with the same file says the same and does not start.
        let start = try ProxyProcess.run(["--config", config, "--listen", "127.0.0.1"])
        #expect(start.status == 1)
        #expect(start.stderr == result.stderr)
    }

    /// A mistyped line is reported once: not again as "needs token_url" or "upstream: required".
    @Test func aMistakeIsNotReportedAgainAsItsConsequences() throws {
        let config = temporaryFile(
            """
            upstrem = https://api.internal/v2
            token_url = https//auth.internal/oauth/token
            client_id = my-client
            authorization_url = https://auth.internal/oauth/authorize
            refresh_token_file = /tmp/refresh_token

            """
        )
        let result = try ProxyProcess.run(["--check", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr == """
                Error: \(config):1: upstrem: unknown key (did you mean 'upstream'?)
                Error: \(config):2: token_url: 'https//auth.internal/oauth/token' must start with http:// or https:// (expected e.g. https://auth.example.com/oauth/token)

                """
        )
    }

    @Test func warnsAboutSettingsThatCannotWorkAsMeantAndPasses() throws {
        let config = temporaryFile(
            """
            upstream = https://api.internal/v2
            tls_insecure_skip_verify = yes
            token_url = https://auth.example.com/oauth/token
            client_id = my-client
            client_secret = ${E2E_CLIENT_SECRET}
            username = alice
            session_name = team
            admin_listen = 0.0.0.0:9901

            """
        )
        let result = try ProxyProcess.run(
            ["--check", "--config", config],
            environment: ["E2E_CLIENT_SECRET": "e2e-client-secret-value"]
        )
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.hasSuffix("configuration OK (5 warnings)\n"))
        #expect(
            result.stderr.split(separator: "\n").map(String.init) == [
                "Warning: \(config):2: tls_insecure_skip_verify: certificates and host names of upstreams, token endpoints and the session store are NOT verified: anyone on the network path can read the token (never in production)",
                "Warning: \(config):3: token_url: auth.example.com is a placeholder (example.com is reserved for documentation): put the real host here",
                "Warning: \(config):6: username: is not used by grant_type = client_credentials",
                "Warning: \(config):7: session_name: is not used without session_store",
                "Warning: \(config):8: admin_listen: 0.0.0.0:9901 accepts connections from other machines: whoever reaches it spends your token (bind 127.0.0.1, or a unix: socket)",
            ]
        )
        #expect(
            !result.stdout.contains("e2e-client-secret-value") && !result.stderr.contains("e2e-client-secret-value")
        )
    }

    /// Token settings with nothing to send them to, a token that never reaches the upstream, and one
    /// that would cross the network in clear.
    @Test func warnsAboutTokenSettingsThatNothingUses() throws {
        let config = temporaryFile(
            """
            upstream = http://api.internal:8080
            access_token = ${E2E_TOKEN}
            grant_type = client_credentials
            client_id = my-client

            """
        )
        let first = try ProxyProcess.run(["--check", "--config", config], environment: ["E2E_TOKEN": "t"])
        #expect(first.status == 0)
        #expect(
            first.stderr.split(separator: "\n").map(String.init) == [
                "Warning: \(config):1: upstream: http:// to api.internal, which is not this machine: tokens cross the network unencrypted (use https://)",
                "Warning: \(config):3: grant_type: is not used without token_url (nothing asks a token endpoint)",
                "Warning: \(config):4: client_id: is not used without token_url (nothing asks a token endpoint)",
            ]
        )
        let elsewhere = try ProxyProcess.run(
            ["--check", "--config", config, "--upstream", "http://127.0.0.1:9090"],
            environment: ["E2E_TOKEN": "t"]
        )
        #expect(elsewhere.stderr.split(separator: "\n").count == 2, "a loopback upstream is not a clear-text warning")
        let injected = temporaryFile(
            "upstream = https://api.internal\naccess_token = t\ninject_hosts = *.api.internal\n"
        )
        let narrow = try ProxyProcess.run(["--check", "--config", injected])
        #expect(narrow.status == 0)
        #expect(
            narrow.stderr
                == "Warning: \(injected):3: inject_hosts: does not match the upstream api.internal: origin-form requests go upstream without the token (add api.internal)\n"
        )
    }

    /// `--upstream` and nothing else: the proxy starts, and says at warn that it adds no token and
    /// which keys would (before, the only trace was `tokens=none` in the info line).
    @Test func anUpstreamAloneWarnsThatNoTokenIsAdded() throws {
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let proxy = try ProxyProcess(["--upstream", upstream.baseURL, "--listen", "127.0.0.1:0"])
        let port = try tcpPort(of: try #require(proxy.waitUntilListening()))
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: port)!,
            "GET /items HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 200)
        #expect(upstream.requests.last?.header("authorization") == nil)
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit() == 0)
        let warning = proxy.standardError.split(separator: "\n").filter { $0.contains(" warn ") }
        #expect(
            warning.map { $0.drop { $0 != " " }.dropFirst() } == [
                #"warn no token source: requests are forwarded without an Authorization header (set access_token, token_url or token_command) at="command line (--upstream)""#
            ]
        )
        let check = try ProxyProcess.run(["--check", "--upstream", upstream.baseURL])
        #expect(
            check.stderr
                == "Warning: command line (--upstream): no token source: requests are forwarded without an Authorization header (set access_token, token_url or token_command)\n"
        )
    }

    /// Start-up logs what --check warns about, each once, at warn.
    @Test func startUpLogsTheWarningsOfCheck() throws {
        let config = temporaryFile(
            "upstream = http://127.0.0.1:9\nlisten = 127.0.0.1:0\ntls_insecure_skip_verify = on\n"
        )
        let proxy = try ProxyProcess(["--config", config, "--log-level", "warn"])
        #expect(proxy.waitUntilListening() != nil)
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit() == 0)
        let warnings = proxy.standardError.split(separator: "\n").filter { $0.contains(" warn ") }
        #expect(warnings.count == 2, "\(warnings)")
        #expect(
            warnings.contains {
                $0.contains("NOT verified") && $0.hasSuffix("key=tls_insecure_skip_verify at=\(config):3")
            }
        )
        #expect(warnings.contains { $0.contains("no token source") })
    }
}
