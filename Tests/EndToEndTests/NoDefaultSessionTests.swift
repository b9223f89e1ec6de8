import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// A config whose keys outside any section reach no API, only `[session NAME]` sections: there is no
/// default session for the user to see (docs/sessions.md, "Several APIs in one proxy"). Not in `/status`, not
/// in `/metrics`, not as the session admin refresh and logout fall back to, not in the start line,
/// and `BEARER_PROXY_URL` is the first named session's base URL.
@Suite struct NoDefaultSessionTests {
    /// Two APIs, each accepting its session's token, and the config that puts `github` on a mount of
    /// the main listener and `internal` on a listener of its own; both stopped when it goes.
    final class TwoAPIs {
        let github: MockUpstream
        let inner: MockUpstream
        let config: String

        init() throws {
            self.github = try MockUpstream(group: e2eMockGroup, acceptedTokens: ["github-token"]).started()
            self.inner = try MockUpstream(group: e2eMockGroup, acceptedTokens: ["internal-token"]).started()
            self.config = temporaryFile(
                """
                listen = 127.0.0.1:0
                admin_listen = 127.0.0.1:0
                [session github]
                mount = /github
                upstream = \(self.github.baseURL)
                token_command = /bin/echo github-token
                [session internal]
                listen = 127.0.0.1:0
                upstream = \(self.inner.baseURL)
                access_token = internal-token
                """
            )
        }

        deinit {
            self.github.stop()
            self.inner.stop()
        }
    }

    @Test func statusMetricsAdminAndTheStartLineShowOnlyTheNamedSessions() throws {
        let apis = try TwoAPIs()
        let proxy = try ProxyProcess(["--config", apis.config])
        defer {
            proxy.signal(SIGTERM)
            _ = proxy.waitForExit()
        }
        let listening = try #require(proxy.waitUntilListening())
        let main = try #require(SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening)))
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let address = try #require(SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: String(admin))))
        func request(_ method: String, _ target: String) throws -> BlockingHTTPClient.Response {
            try httpRequest(
                address,
                "\(method) \(target) HTTP/1.1\r\nHost: \(address)\r\nContent-Length: 0\r\n\r\n",
                method: method == "POST" ? .post : .get
            )
        }

        // The start line: the process-wide fields, the sessions by name, no ghost session's settings.
        let start = try #require(proxy.standardError.split(separator: "\n").first { $0.contains(" info starting ") })
        #expect(start.contains(" sessions=github,internal "), "\(start)")
        for field in [
            " other_hosts=forward ", " workers=", " admin=127.0.0.1:", " tls_verify=on ", " session_store=off",
        ] {
            #expect(start.contains(field), "\(field) missing from \(start)")
        }
        for ghost in ["upstream=", "inject_hosts=", "tokens=", "refresh_on=", "tls_client_cert="] {
            #expect(!start.contains(" \(ghost)"), "\(ghost) in \(start)")
        }

        // /status: no default session at the top level, none among the sessions.
        func statusObject() throws -> [String: Any]? {
            try JSONSerialization.jsonObject(with: Data(request("GET", "/status").text.utf8)) as? [String: Any]
        }
        #expect(
            waitUntil {
                let sessions = (try? statusObject())?["sessions"] as? [String: [String: Any]]
                return sessions?["github"]?["state"] as? String == "ready"
            },
            "github holds its first token"
        )
        let status = try request("GET", "/status")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.text.utf8)) as? [String: Any])
        #expect(object["default_session"] is NSNull, "\(status.text)")
        #expect(Set(object.keys) == ["default_session", "open_connections", "sessions"], "\(status.text)")
        let sessions = try #require(object["sessions"] as? [String: [String: Any]])
        #expect(Set(sessions.keys) == ["github", "internal"])
        #expect(sessions["github"]?["upstream"] as? String == apis.github.baseURL)
        #expect(sessions["github"]?["state"] as? String == "ready")

        // Refresh and logout need a session named; a refresh of one that is named works as before.
        let choose = "bearer-proxy: this proxy has no default session; name one: ?session=github or ?session=internal\n"
        for path in ["/refresh", "/logout"] {
            let response = try request("POST", path)
            #expect(response.status == 400, "\(path): \(response.text)")
            #expect(response.text == choose, "\(path)")
        }
        let ghost = try request("POST", "/refresh?session=default")
        #expect(ghost.status == 404)
        #expect(ghost.text == "bearer-proxy: there is no session 'default' (the sessions are github, internal)\n")
        let refreshed = try request("POST", "/refresh?session=github")
        #expect(refreshed.status == 200, "\(refreshed.text)")
        #expect(refreshed.text == #"{"outcome":"ok","token_generation":2}"# + "\n")
        #expect(try httpRequest(main, "GET /github/after HTTP/1.1\r\nHost: \(main)\r\n\r\n").status == 200)
        #expect(apis.github.requests.last?.target == "/after")
        #expect(!proxy.standardError.contains("session=default"), "\(proxy.standardError)")

        // /metrics: the named sessions' series, no ghost's.
        let metrics = try request("GET", "/metrics").text
        #expect(!metrics.contains(#"session="default""#))
        for line in [
            #"bearer_proxy_token_generation{session="github"} 2"#,
            #"bearer_proxy_token_generation{session="internal"} 1"#,
            #"bearer_proxy_token_refreshes_total{session="github",result="ok"} 2"#,
            #"bearer_proxy_parked_requests{session="internal"} 0"#,
        ] {
            #expect(metrics.contains("\n\(line)\n"), "missing \(line)")
        }
    }

    static let sections = [
        "vendor": "[session vendor]\ninject_hosts = api.vendor.test\naccess_token = t0\n",
        "github": "[session github]\nmount = /github\nupstream = http://127.0.0.1:3001\naccess_token = t1\n",
        "internal":
            "[session internal]\nlisten = 127.0.0.1:8152\nupstream = http://127.0.0.1:3002\naccess_token = t2\n",
    ]

    /// `BEARER_PROXY_URL` is the first named session's base URL (its own listener's, else the main
    /// listener's with its mount), past any with neither; with none that has one, the proxy's.
    @Test(arguments: [
        (
            "a mount, after an inject_hosts-only session", ["vendor", "github", "internal"],
            "http://127.0.0.1:8151/github"
        ),
        ("a listener of its own", ["internal", "github"], "http://127.0.0.1:8152"),
        ("only inject_hosts", ["vendor"], "http://127.0.0.1:8151"),
    ])
    func envPointsBearerProxyURLAtTheFirstNamedSessionsBaseURL(_ id: String, order: [String], url: String) throws {
        let config = temporaryFile("listen = 127.0.0.1:8151\n" + order.map { Self.sections[$0]! }.joined())
        let result = try ProxyProcess.run(["env", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("export BEARER_PROXY_URL=") } == ["export BEARER_PROXY_URL='\(url)'"])
        #expect(lines.contains("export http_proxy='http://127.0.0.1:8151'"), "http_proxy stays the proxy's")
    }

    /// `run`'s program reaches the first named session's API at `BEARER_PROXY_URL`, with its token.
    @Test func runGivesTheProgramTheFirstNamedSessionsURL() throws {
        let apis = try TwoAPIs()
        let child = temporaryFile(
            """
            import os, urllib.request
            url = os.environ["BEARER_PROXY_URL"]
            print(url, url == os.environ["BEARER_PROXY_URL_GITHUB"], urllib.request.urlopen(url + "/x").status)
            """,
            name: "child.py"
        )
        let run = try ProxyProcess(
            ["run", "--config", apis.config, "--", "/usr/bin/python3", child],
            launcher: ["/usr/bin/setsid", "--fork", "--wait"]
        )
        #expect(run.waitForExit() == 0, "stderr: \(run.standardError)")
        let words = run.standardOutput.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(
            words.count == 3 && words[0].hasSuffix("/github") && words[1] == "True" && words[2] == "200",
            "\(words)"
        )
        #expect(apis.github.requests.last?.target == "/x")
        #expect(apis.github.requests.last?.header("authorization") == "Bearer github-token")
        #expect(apis.inner.requests.isEmpty)
    }
}
