import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// The built `bearer-bench --config` against "your own" stack on loopback: the demo's mock API and a
/// mock token endpoint that takes 300 ms, in this process; the bench starts the proxy with the config
/// that points at them, as a user's would. Checks what the report says, never how fast anything was.
@Suite(.serialized) struct StackRunTests {
    static let tokenDelay = Duration.milliseconds(300)
    static let mockGroup = EventLoopGroup(count: 1, name: "stack-mocks")

    /// The mocks, and a config for them.
    final class Stack {
        let tokenServer: MockTokenServer
        let upstream: MockUpstream
        let config: String
        let folder: String

        init(upstreamURL: String? = nil) throws {
            let authority = MockTokenAuthority()
            var settings = MockTokenServer.Settings()
            settings.clientID = "stack-client"
            settings.clientSecret = "stack-secret"
            settings.delay = StackRunTests.tokenDelay
            self.tokenServer = MockTokenServer(group: StackRunTests.mockGroup, authority: authority, settings: settings)
            self.upstream = MockUpstream(group: StackRunTests.mockGroup, authority: authority, recordsRequests: false)
            try self.tokenServer.start()
            try self.upstream.start()
            self.folder = try ScratchSpace.newDirectory("stack-run")
            self.config = self.folder + "/proxy.conf"
            try """
            upstream = \(upstreamURL ?? self.upstream.baseURL)
            token_url = \(self.tokenServer.url)
            grant_type = client_credentials
            client_id = stack-client
            client_secret = stack-secret

            """.write(toFile: self.config, atomically: true, encoding: .utf8)
        }

        deinit {
            self.upstream.stop()
            self.tokenServer.stop()
            try? FileManager.default.removeItem(atPath: self.folder)
        }
    }

    static func json(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func eachStormCostsOneTokenCallAndItsRequestsWaitForIt() throws {
        let stack = try Stack()
        let json = stack.folder + "/report.json"
        let svg = stack.folder + "/report.svg"
        let outcome = try runProgram(
            [
                BenchTemporaryFilesTests.binary, "--config", stack.config, "--path", "/items", "--connections", "8",
                "--duration", "3s", "--warmup", "0s", "--refresh-every", "600ms", "--json", json, "--svg", svg,
            ],
            timeout: .seconds(120)
        )
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let report = try Self.json(json)
        let phases = try #require(report["phases"] as? [String: Any])
        let storms = try #require(phases["storms"] as? [String: Any])
        let steady = try #require(phases["steady"] as? [String: Any])
        let stormCount = try #require(report["storms"] as? Int)
        #expect(stormCount >= 2)
        // One token call per storm: the report's, and the token endpoint's own count (after the
        // proxy's start-up call).
        #expect(report["token_calls"] as? Int == stormCount)
        #expect(stack.tokenServer.callCount == 1 + stormCount)
        #expect(report["token_calls_note"] as? String == "one token call per storm")
        #expect(steady["token_calls"] as? Int == 0)
        // Each storm: the proxy measured the token endpoint's delay, and the requests sent while it
        // ran waited for it — up to about that long, since the first parks as the storm begins.
        let delay = Self.tokenDelay.seconds * 1000
        for storm in try #require(storms["storms"] as? [[String: Any]]) {
            #expect(storm["outcome"] as? String == "ok")
            let refresh = try #require(storm["refresh_ms"] as? Double)
            #expect(refresh >= delay * 0.9, "refresh \(refresh) ms")
            #expect((storm["parked_requests"] as? Int ?? 0) > 0)
            #expect((storm["proxy_waiting_requests"] as? Int ?? 0) > 0)
            let waited = try #require(storm["parked_wait_ms"] as? [String: Double])
            #expect((waited["max"] ?? 0) >= delay * 0.5, "parked requests waited \(waited)")
            #expect((waited["max"] ?? 0) <= refresh + 2000, "parked requests waited \(waited)")
        }
        // Every figure: both phases side by side, the series per 100 ms, errors by kind.
        for phase in [steady, storms] {
            for key in [
                "requests", "requests_per_second", "latency_ms", "errors", "token_calls", "storms", "parked_requests",
                "parked_wait_ms", "natural_refreshes", "series", "duration_s",
            ] {
                #expect(phase[key] != nil, "phase lacks \(key)")
            }
            let latency = try #require(phase["latency_ms"] as? [String: Double])
            #expect(Set(latency.keys) == ["p50", "p99", "p999", "max"])
            let errors = try #require(phase["errors"] as? [String: Any])
            #expect(Set(errors.keys) == ["upstream_statuses", "refresh_failures", "connections"])
            let series = try #require(phase["series"] as? [[String: Double]])
            #expect(series.count >= 19)
            #expect(Set(series[0].keys) == ["t", "rps", "p50_ms", "p99_ms", "p999_ms"])
            #expect((phase["requests"] as? Int ?? 0) > 0)
        }
        let settings = try #require(report["settings"] as? [String: Any])
        #expect(settings["token_endpoint"] as? String == stack.tokenServer.url)
        #expect(settings["upstream"] as? String == stack.upstream.baseURL)
        #expect(settings["storms_per_minute"] as? Double == 100)
        // The chart marks each storm: a dashed line each, beside the legend's.
        let chart = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(chart.contains("storm: POST /refresh?park=1"))
        #expect(chart.components(separatedBy: "stroke-dasharray").count - 1 == 1 + stormCount)
        // The text report says the same, and nothing names a token.
        #expect(outcome.standardOutput.contains("token calls against storms: one token call per storm"))
        #expect(!(outcome.standardOutput + outcome.standardError).contains("mock-access-"))
    }

    /// A non-loopback upstream: the bench says what it would do, and without --yes exits having sent
    /// nothing (192.0.2.1 is TEST-NET-1, never contacted; the token endpoint here counts its calls).
    @Test func aRemoteUpstreamNeedsYesAndNothingIsSentWithoutIt() throws {
        let stack = try Stack(upstreamURL: "http://192.0.2.1:8080")
        let json = stack.folder + "/report.json"
        let outcome = try runProgram(
            [
                BenchTemporaryFilesTests.binary, "--config", stack.config, "--path", "/items", "--refresh-every", "10s",
                "--json", json,
            ],
            timeout: .seconds(60)
        )
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("target          GET http://192.0.2.1:8080/items"))
        #expect(outcome.standardError.contains("connections     64, rate 100 requests/s"))
        #expect(outcome.standardError.contains("every 10 s (6 a minute)"))
        #expect(outcome.standardError.contains("token endpoint  \(stack.tokenServer.url)"))
        #expect(
            outcome.standardError.hasSuffix(
                "Error: the upstream http://192.0.2.1:8080 is not this machine: pass --yes to send this load to it and call its token endpoint (nothing was sent)\n"
            )
        )
        #expect(stack.tokenServer.callCount == 0, "no proxy was started")
        #expect(!FileManager.default.fileExists(atPath: json))
        #expect(outcome.standardOutput.isEmpty)
    }

    /// Ctrl-C in the middle of the load: it stops at once, and the report is still written.
    @Test func anInterruptStopsTheLoadAndStillReports() throws {
        let stack = try Stack()
        let json = stack.folder + "/report.json"
        let output = makeClosingPipe()
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let bench = try ChildProcess(
            [
                BenchTemporaryFilesTests.binary, "--config", stack.config, "--path", "/items", "--connections", "2",
                "--duration", "60s", "--warmup", "0s", "--json", json,
            ],
            stdout: output.write,
            stderr: null,
            ownProcessGroup: true
        )
        close(output.write)
        let text = Locked("")
        let reader = spawnThread(name: "stack-stdout") {
            readUntilEnd(output.read) { chunk in text.withLock { $0 += chunk } }
            close(output.read)
        }
        defer {
            if bench.isRunning {
                // Its proxy runs in a process group of its own: a Ctrl-C does not reach it.
                for child in BenchTemporaryFilesTests.processes(where: { $0.parent == bench.pid }) {
                    kill(child.pid, SIGKILL)
                }
                kill(-bench.pid, SIGKILL)
            }
            _ = bench.waitUntilExit()
        }
        // The load is flowing once the upstream has answered requests.
        #expect(
            waitUntil(timeout: .seconds(30)) {
                !bench.isRunning || stack.upstream.accepted.load(ordering: .relaxed) > 20
            }
        )
        try #require(bench.isRunning, "the bench ended before it was interrupted")
        kill(-bench.pid, SIGINT)
        #expect(bench.wait(timeout: .seconds(30)) == .exited(status: 130))
        let report = try Self.json(json)
        #expect(report["interrupted"] as? Bool == true)
        let phases = try #require(report["phases"] as? [String: Any])
        #expect(phases["storms"] == nil, "the storm phase never began")
        #expect(((phases["steady"] as? [String: Any])?["requests"] as? Int ?? 0) > 0)
        joinThread(reader)
        #expect(text.withLock { $0.contains("interrupted (Ctrl-C)") })
    }
}
