import BearerCore
import BearerDemo
import BearerTestSupport
import Foundation
import Testing

/// HTTP/2 with prior knowledge (RFC 9113 §3.3) from real clients (curl, nghttp2's h2load) through the
/// built binary to an HTTP/1.1 mock API whose tokens come from a mock token server.
@Suite struct HTTP2PriorKnowledgeTests {
    final class Setup {
        let authority = MockTokenAuthority()
        let tokenServer: MockTokenServer
        let upstream: MockUpstream
        let proxy: ProxyProcess
        let port: Int
        let socket: String

        init(_ extra: String = "") throws {
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority)
            try self.tokenServer.start()
            self.upstream = MockUpstream(group: e2eMockGroup, authority: self.authority)
            try self.upstream.start()
            self.socket = temporaryDirectory() + "/proxy.sock"
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0, unix:\(self.socket)
                upstream = \(self.upstream.baseURL)
                token_url = \(self.tokenServer.url)
                client_id = e2e-client
                client_secret = e2e-secret
                access_log = stderr
                \(extra)
                """
            )
            self.proxy = try ProxyProcess(["--config", config])
            let listening = try #require(self.proxy.waitUntilListening())
            self.port = try tcpPort(of: String(listening.split(separator: ",").first!))
        }

        func curl(_ arguments: [String]) throws -> ExternalTools.Outcome {
            try ExternalTools.run([ExternalTools.curl, "-sS", "--max-time", "10"] + arguments, timeout: .seconds(20))
        }

        func stop() -> String {
            self.proxy.signal(SIGTERM)
            _ = self.proxy.waitForExit()
            self.upstream.stop()
            self.tokenServer.stop()
            return self.proxy.standardError
        }
    }

    @Test(.requires(.curl)) func curlWithPriorKnowledgeGetsTheTokenOnTCPAndUnixListeners() throws {
        let setup = try Setup("admin_listen = 127.0.0.1:0")
        let overTCP = try setup.curl([
            "--http2-prior-knowledge", "-w", "\n%{http_version}", "http://127.0.0.1:\(setup.port)/whoami",
        ])
        let overUnix = try setup.curl([
            "--http2-prior-knowledge", "-w", "\n%{http_version}", "--unix-socket", setup.socket,
            "http://localhost/whoami",
        ])
        let admin = try #require(word(startingWith: "admin=", in: setup.proxy.standardError)?.dropFirst(6))
        let metrics = try setup.curl(["http://\(admin)/metrics"]).standardOutput
        let stderr = setup.stop()
        #expect(metrics.contains(#"bearer_proxy_requests_total{class="2xx",protocol="h2"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"bearer_proxy_requests_total{class="2xx",protocol="http/1.1"} 0"#))
        #expect(overTCP.status == 0, "\(overTCP.standardError)")
        #expect(overTCP.standardOutput.hasSuffix("\n2"), "\(overTCP.standardOutput)")
        #expect(overTCP.standardOutput.contains("generation 1") || overTCP.standardOutput.contains("mock-access-1"))
        #expect(overUnix.status == 0, "\(overUnix.standardError)")
        #expect(overUnix.standardOutput.hasSuffix("\n2"), "\(overUnix.standardOutput)")
        #expect(stderr.contains("protocol=h2"))
        #expect(!stderr.contains("mock-access-1"))
    }

    /// A stream is an exchange like any other: the session's rules refuse it before anything of it
    /// reaches the upstream (docs/untrusted-programs.md).
    @Test(.requires(.curl)) func aStreamTheRulesRefuseIsA403ThatReachesNothing() throws {
        let setup = try Setup("deny = GET /v1/admin")
        let allowed = try setup.curl([
            "--http2-prior-knowledge", "-w", "\n%{http_code} %{http_version}", "http://127.0.0.1:\(setup.port)/whoami",
        ])
        let seenBefore = setup.upstream.requests.count
        let refused = try setup.curl([
            "--http2-prior-knowledge", "-w", "\n%{http_code} %{http_version}",
            "http://127.0.0.1:\(setup.port)/v1/admin",
        ])
        let seenAfter = setup.upstream.requests.count
        _ = setup.stop()
        #expect(allowed.standardOutput.hasSuffix("\n200 2"), "\(allowed.standardOutput)")
        #expect(refused.standardOutput.hasSuffix("(deny = GET /v1/admin)\n\n403 2"), "\(refused.standardOutput)")
        #expect(refused.standardOutput.hasPrefix("bearer-proxy: GET /v1/admin is not allowed for session"))
        #expect(seenAfter == seenBefore)
    }

    @Test(.requires(.h2load)) func aRevocationUnderManyConcurrentStreamsCostsOneTokenCall() throws {
        let setup = try Setup()
        let warm = try setup.curl([
            "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(setup.port)/whoami",
        ])
        #expect(warm.standardOutput == "200")
        let callsBefore = setup.tokenServer.callCount
        setup.authority.revokeAll()
        let load = try ExternalTools.run(
            [
                ExternalTool.h2load.program, "-n", "100", "-c", "1", "-m", "100",
                "http://127.0.0.1:\(setup.port)/whoami",
            ],
            timeout: .seconds(30)
        )
        let calls = setup.tokenServer.callCount - callsBefore
        _ = setup.stop()
        #expect(load.standardOutput.contains("100 succeeded"), "\(load.standardOutput)")
        #expect(load.standardOutput.contains("status codes: 100 2xx"), "\(load.standardOutput)")
        #expect(calls == 1)
    }

    @Test(.requires(.curl)) func aPOSTBodySurvivesTheReplayByteForByte() throws {
        let setup = try Setup()
        let body = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let file = temporaryDirectory() + "/body"
        try Data(body).write(to: URL(fileURLWithPath: file))
        let echoed = file + ".echoed"
        let warm = try setup.curl([
            "--http2-prior-knowledge", "-o", "/dev/null", "http://127.0.0.1:\(setup.port)/whoami",
        ])
        #expect(warm.status == 0)
        setup.authority.revokeAll()
        let post = try setup.curl([
            "--http2-prior-knowledge", "-X", "POST", "--data-binary", "@\(file)", "-o", echoed, "-w", "%{http_code}",
            "http://127.0.0.1:\(setup.port)/echo",
        ])
        let stderr = setup.stop()
        #expect(post.standardOutput == "200", "\(post.standardError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: echoed)) == Data(body))
        #expect(stderr.contains("replayed=yes protocol=h2"))
    }

    /// A stream's exchange runs behind an in-memory pipe; its audit line names the client at the
    /// connection's end: the TCP peer's address, or the unix socket peer's process (curl's pid: the
    /// shell prints its own and execs curl) and user.
    @Test(.requires(.curl)) func theAuditLogNamesEachStreamsRealClient() throws {
        let path = temporaryDirectory() + "/audit.jsonl"
        let setup = try Setup("audit_log = \(path)")
        let overTCP = try setup.curl([
            "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{local_port}", "http://127.0.0.1:\(setup.port)/tcp",
        ])
        let overUnix = try ExternalTools.run(
            [
                "/bin/sh", "-c", "echo $$; exec \"$0\" \"$@\"", ExternalTools.curl, "-sS", "--max-time", "10",
                "--http2-prior-knowledge", "-o", "/dev/null", "--unix-socket", setup.socket, "http://localhost/unix",
            ],
            timeout: .seconds(20)
        )
        _ = setup.stop()
        let records = try AuditLogBinaryTests.records(path)
        let tcp = try #require(records.first { $0["path"] as? String == "/tcp" }, "\(records)")
        let unix = try #require(records.first { $0["path"] as? String == "/unix" }, "\(records)")
        #expect(tcp["client"] as? String == "127.0.0.1:\(overTCP.standardOutput)")
        #expect(tcp["protocol"] as? String == "HTTP/2")
        let process = try #require(unix["client"] as? [String: Any], "\(unix)")
        #expect(process["pid"] as? Int == Int(overUnix.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(process["uid"] as? Int == Int(getuid()))
        #expect(unix["protocol"] as? String == "HTTP/2")
        #expect(unix["status"] as? Int == 200)
    }

    @Test(.requires(.curl)) func withHTTP2OffAPrefaceIsRefusedNamingTheKey() throws {
        let setup = try Setup("http2 = off")
        let refused = try setup.curl(["--http2-prior-knowledge", "http://127.0.0.1:\(setup.port)/whoami"])
        let plain = try setup.curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(setup.port)/whoami"])
        let stderr = setup.stop()
        #expect(refused.status != 0)
        #expect(plain.standardOutput == "200")
        #expect(stderr.contains("http2 = off"))
    }
}
