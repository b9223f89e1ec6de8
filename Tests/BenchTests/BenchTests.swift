import BearerCore
import Foundation
import Testing

@testable import bearer_bench

@Suite struct PercentileTests {
    @Test func nearestRankPercentiles() {
        let samples = (1...1000).map { UInt32($0) }.shuffled()
        let statistics = LatencyStatistics(microseconds: samples)
        #expect(statistics.count == 1000)
        #expect(statistics.p50 == 500)
        #expect(statistics.p99 == 990)
        #expect(statistics.p999 == 999)
        #expect(statistics.max == 1000)
        #expect(statistics.p99Milliseconds == 0.99)
    }

    @Test func smallAndEmptySamples() {
        #expect(LatencyStatistics(microseconds: []).p99 == 0)
        let one = LatencyStatistics(microseconds: [42])
        #expect(one.p50 == 42 && one.p99 == 42 && one.max == 42)
        let two = LatencyStatistics(microseconds: [10, 20])
        #expect(two.p50 == 10 && two.p99 == 20)
    }

    @Test func timeSeriesBucketsThroughputAndP99PerWindow() {
        var samples: [Sample] = []
        for index in 0..<100 {
            samples.append(Sample(completedAtMicroseconds: UInt32(index * 1000), latencyMicroseconds: 100))
        }
        samples.append(Sample(completedAtMicroseconds: 150_000, latencyMicroseconds: 9000))
        let series = timeSeries(samples, window: 0.1, duration: 0.2)
        #expect(series.count == 2)
        #expect(series[0].requestsPerSecond == 1000)
        #expect(series[0].p99Milliseconds == 0.1)
        #expect(series[1].requestsPerSecond == 10)
        #expect(series[1].p99Milliseconds == 9)
    }
}

@Suite struct BenchOptionsTests {
    @Test func parsesEveryOption() throws {
        let options = try BenchOptions.parse([
            "--scenario", "steady,expiry", "--connections", "1000", "--duration", "20s", "--warmup", "500ms",
            "--pipeline", "4", "--expire-every", "2", "--proxy-bin", "/x/bearer-proxy", "--json", "r.json", "--svg",
            "r.svg", "--target", "http://127.0.0.1:9000/", "--idle-connections", "10000", "--repeat", "5",
            "--sessions", "10",
        ])
        #expect(options.scenarios == [.steady, .expiry])
        #expect(options.connections == 1000)
        #expect(options.duration == .seconds(20))
        #expect(options.warmup == .milliseconds(500))
        #expect(options.pipeline == 4)
        #expect(options.expireEvery == .seconds(2))
        #expect(options.proxyBinary == "/x/bearer-proxy")
        #expect(options.jsonPath == "r.json" && options.svgPath == "r.svg")
        #expect(options.target == "http://127.0.0.1:9000/")
        #expect(options.idleConnections == 10000)
        #expect(options.repeats == 5)
        #expect(options.sessions == 10)
        #expect(try BenchOptions.parse([]).repeats == 3)
        #expect(try BenchOptions.parse([]).sessions == 1)
    }

    /// A run against your own stack: its flags, and what it cannot run without.
    @Test func parsesARunAgainstYourOwnStack() throws {
        let options = try BenchOptions.parse([
            "--config", "my.conf", "--session", "shop", "--path", "/v1/items", "--method", "HEAD", "--refresh-every",
            "5s", "--proxy", "http://127.0.0.1:8080", "--admin", "http://127.0.0.1:9901", "--yes",
        ])
        #expect(options.isStackRun)
        #expect(options.configPath == "my.conf" && options.sessionName == "shop" && options.path == "/v1/items")
        #expect(options.method == "HEAD" && options.refreshEvery == .seconds(5) && options.assumeYes)
        #expect(options.proxyURL == "http://127.0.0.1:8080" && options.adminURL == "http://127.0.0.1:9901")
        #expect(try BenchOptions.parse(["--config", "c", "--path", "/"]).refreshEvery == .seconds(2))
        #expect(!(try BenchOptions.parse([]).isStackRun))
        for arguments in [
            ["--config", "c"], ["--config", "c", "--path", "items"], ["--proxy", "http://127.0.0.1:1", "--path", "/"],
            ["--session", "shop"], ["--yes"], ["--config", "c", "--path", "/", "--method", "get"],
            ["--config", "c", "--path", "/", "--refresh-every", "10ms"],
        ] {
            #expect(throws: BenchOptions.ParseError.self, "\(arguments)") { try BenchOptions.parse(arguments) }
        }
    }

    /// A proxy that logs a line per request keeps only its start and its last lines in the bench.
    @Test func aProxysStderrIsKeptBounded() {
        var output = ""
        ChildProxy.append("listening on 127.0.0.1:8080 admin=127.0.0.1:9901\n", to: &output)
        for index in 0..<20_000 { ChildProxy.append("request \(index) status=200 path=/v1/items\n", to: &output) }
        #expect(output.utf8.count <= ChildProxy.keptHead + 3 * ChildProxy.keptTail)
        #expect(output.hasPrefix("listening on 127.0.0.1:8080 admin=127.0.0.1:9901\n"))
        #expect(output.hasSuffix("request 19999 status=200 path=/v1/items\n"))
    }

    @Test func defaultsToAllScenarios() throws {
        #expect(try BenchOptions.parse([]).scenarios == [.direct, .steady, .expiry, .proactive])
        #expect(try BenchOptions.parse(["--scenario", "all"]).scenarios == [.direct, .steady, .expiry, .proactive])
    }

    @Test func aFleetRunsNextToTheSingleProxyExpiryScenario() throws {
        let options = try BenchOptions.parse(["--scenario", "fleet", "--proxies", "4"])
        #expect(options.scenarios == [.expiry, .fleet])
        #expect(options.proxies == 4)
        #expect(try BenchOptions.parse([]).proxies == 3)
        #expect(try BenchOptions.parse(["--scenario", "fleet,expiry"]).scenarios == [.fleet, .expiry])
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--proxies", "0"]) }
    }

    @Test func interceptRunsBesideSteadyTLSAndNewTunnelsAndMitmproxyWhenAsked() throws {
        #expect(
            try BenchOptions.parse(["--scenario", "intercept"]).scenarios
                == [.steadyTLS, .intercept, .newTunnels, .resumedTunnels]
        )
        #expect(
            try BenchOptions.parse(["--with-mitmproxy", "--scenario", "intercept"]).scenarios
                == [.steadyTLS, .intercept, .newTunnels, .resumedTunnels, .mitmproxy]
        )
        #expect(try BenchOptions.parse(["--scenario", "new-tunnels"]).scenarios == [.newTunnels])
        #expect(try BenchOptions.parse(["--scenario", "resumed-tunnels"]).scenarios == [.resumedTunnels])
        #expect(
            try BenchOptions.parse(["--scenario", "all", "--with-mitmproxy"]).scenarios
                == BenchOptions.Scenario.standard
        )
    }

    @Test func dpopRunsBesideSteady() throws {
        #expect(try BenchOptions.parse(["--scenario", "dpop"]).scenarios == [.steady, .dpop])
        #expect(try BenchOptions.parse(["--scenario", "dpop,dpop-expiry"]).scenarios == [.steady, .dpop, .dpopExpiry])
        #expect(try BenchOptions.parse(["--scenario", "dpop-expiry"]).scenarios == [.dpopExpiry])
    }

    @Test func rejectsBadOptions() {
        #expect(throws: BenchOptions.ParseError(description: "Unknown option '--conections'")) {
            try BenchOptions.parse(["--conections", "1"])
        }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--scenario", "burst"]) }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--connections", "0"]) }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--sessions", "0"]) }
    }
}

@Suite struct ReportTests {
    static func result(
        _ name: String,
        rps: Double,
        p99: UInt32,
        expiries: Int = 0,
        calls: Int = 0,
        proxied: Bool = true
    ) -> ScenarioResult {
        ScenarioResult(
            name: name,
            proxies: proxied ? 1 : 0,
            connections: 64,
            durationSeconds: 10,
            requests: Int(rps * 10),
            requestsPerSecond: rps,
            latency: LatencyStatistics(microseconds: [100, p99]),
            errors: [:],
            statuses: [:],
            client401s: 0,
            tokenCalls: calls,
            expiryEvents: expiries,
            replays: 0,
            maxTimesSeenUpstream: 1,
            proxyPeakRSSMiB: proxied ? 20 : nil,
            proxyCPUSeconds: proxied ? 5 : nil,
            series: [TimeSeriesPoint(startSeconds: 0, requestsPerSecond: rps, p99Milliseconds: 1)],
            expiryTimes: [1],
            refreshTimes: [1.001]
        )
    }

    /// Two rounds of direct, steady and expiry; `noise` moves the second round's steady throughput.
    static func rounds(noise: Double = 0) -> [[ScenarioResult]] {
        [0.0, noise].map { shift in
            [
                Self.result("direct", rps: 100_000, p99: 1000, proxied: false),
                Self.result("steady", rps: 50_000 * (1 + shift), p99: 2000),
                Self.result("expiry", rps: 45_000, p99: 3000, expiries: 10, calls: 10),
            ]
        }
    }

    static let settings = BenchReport.Settings(connections: 64, durationSeconds: 10, warmupSeconds: 2, rounds: 2)

    @Test func mediansAndSpread() {
        #expect(Spread([3, 1, 2]) == Spread([2, 2, 2, 1, 3]))
        #expect(Spread([4, 1, 2, 3]).median == 2.5)
        let spread = Spread([90, 100, 110])
        #expect(spread.minimum == 90 && spread.maximum == 110 && spread.range == 20)
        #expect(spread.relativeHalfRange == 0.1)
    }

    @Test func jsonKeepsTheDocumentedNames() throws {
        let rounds = Self.rounds()
        let data = BenchReport.json(
            ScenarioSummary.group(rounds),
            ratios: RatioSummary.compute(rounds, comparison: nil),
            idle: nil,
            settings: Self.settings
        )
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let scenarios = try #require(object["scenarios"] as? [[String: Any]])
        #expect(scenarios.count == 3)
        for key in [
            "name", "proxies", "connections", "requests", "requests_per_second", "requests_per_second_range",
            "latency_ms",
            "p99_ms_range", "errors", "client_401s", "token_calls", "expiry_events", "refreshes_per_expiry", "replays",
            "max_times_seen_upstream", "proxy_peak_rss_mib", "proxy_cpu_s", "rounds",
        ] {
            #expect(scenarios[2][key] != nil, "missing \(key)")
        }
        let latency = try #require(scenarios[2]["latency_ms"] as? [String: Double])
        #expect(Set(latency.keys) == ["p50", "p99", "p999", "max"])
        #expect(scenarios[2]["refreshes_per_expiry"] as? Double == 1)
        #expect(scenarios[2]["expiry_events"] as? Int == 20, "summed over the rounds")
        #expect((scenarios[2]["rounds"] as? [[String: Any]])?.count == 2)
        let ratios = try #require(object["ratios"] as? [String: Any])
        #expect(ratios["steady_over_direct"] as? Double == 0.5)
        #expect(ratios["expiry_over_steady"] as? Double == 0.9)
        #expect(ratios["expiry_p99_over_steady_p99"] as? Double == 1.5)
        #expect((object["settings"] as? [String: Any])?["rounds"] as? Int == 2)
    }

    @Test func tableAndChartShowEveryScenario() {
        let rounds = Self.rounds()
        let summaries = ScenarioSummary.group(rounds)
        let table = BenchReport.table(
            summaries,
            ratios: RatioSummary.compute(rounds, comparison: nil),
            idle: IdleResult(connections: 10, established: 10, proxyRSSMiB: 30, proxyRSSBeforeMiB: 10, stopReason: nil),
            settings: Self.settings
        )
        #expect(table.contains("\nsteady "))
        #expect(table.contains("expiry / steady throughput  0.90 ± 0.00  (rounds 0.90–0.90)"))
        #expect(table.contains("idle: 10 of 10 keep-alive connections held; proxy RSS 30.0 MiB"))
        #expect(!table.contains("\ndirect           0"), "direct has no token figures")
        let svg = SVGChart.render(summaries.map(\.representative))
        #expect(svg.hasPrefix("<svg"))
        for name in ["direct", "steady", "expiry"] {
            #expect(svg.contains("<tspan font-weight=\"bold\">\(name)</tspan>"), "no panel for \(name)")
        }
    }

    @Test func sessionsAreReportedOneLineEachSummedOverTheRounds() throws {
        let rounds = (0..<2).map { _ in
            var expiry = Self.result("expiry", rps: 45_000, p99: 3000, expiries: 5, calls: 5)
            expiry.sessions = [
                SessionResult(name: "default", requests: 300, client401s: 0, tokenCalls: 3, expiryEvents: 3),
                SessionResult(name: "s2", requests: 200, client401s: 0, tokenCalls: 2, expiryEvents: 2),
            ]
            return [expiry]
        }
        let summaries = ScenarioSummary.group(rounds)
        let table = BenchReport.table(summaries, ratios: [], idle: nil, settings: Self.settings)
        #expect(table.contains("expiry by session:"))
        #expect(table.contains(BenchReport.sessionColumns[0]))
        let line = try #require(table.split(separator: "\n").first { $0.hasPrefix("s2 ") })
        #expect(line.split(separator: " ").map(String.init) == ["s2", "400", "0", "4", "4", "1.00"])
        let data = BenchReport.json(summaries, ratios: [], idle: nil, settings: Self.settings)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let scenario = try #require((object["scenarios"] as? [[String: Any]])?.first)
        let sessions = try #require(scenario["sessions"] as? [[String: Any]])
        #expect(sessions.map { $0["name"] as? String } == ["default", "s2"])
        #expect(sessions[1]["token_calls"] as? Int == 4 && sessions[1]["expiry_events"] as? Int == 4)
        #expect(((scenario["rounds"] as? [[String: Any]])?.first?["sessions"] as? [Any])?.count == 2)
    }

    @Test func aRatioTheRoundsDisagreeOnMoreThanItDiffersFromOneIsCalledNoisy() {
        let steadyRounds = Self.rounds(noise: 0.01)
        let quiet = RatioSummary.compute(steadyRounds, comparison: nil).first { $0.key == "expiry_over_steady" }
        #expect(quiet?.isInconclusive == false)
        // Rounds of 0.90 and 1.29: 1.09 ± 0.19, an interval that reaches past 1.
        let noisyRounds = Self.rounds(noise: -0.3)
        let noisy = RatioSummary.compute(noisyRounds, comparison: nil).first { $0.key == "expiry_over_steady" }
        #expect(noisy?.isInconclusive == true)
        let lines = BenchReport.ratioLines(RatioSummary.compute(noisyRounds, comparison: nil), rounds: 2)
        #expect(
            lines.contains {
                $0.hasPrefix("expiry / steady throughput  1.09 ± 0.19  (rounds 0.90–1.29)  noisy: the rounds fall")
            }
        )
        #expect(!lines.contains { $0.hasPrefix("steady / direct throughput") && $0.contains("noisy:") })
        #expect(
            BenchReport.ratioLines(RatioSummary.compute([noisyRounds[0]], comparison: nil), rounds: 1).last
                == "one round: how noisy this machine is was not measured; compare with --repeat 3 or more"
        )
    }

    @Test func aSpreadWiderThanTheDistanceFromOneIsNoisyEvenOnOneSide() {
        let ratio = RatioSummary(key: "k", label: "a / b throughput", spread: Spread([1.01, 1.05, 1.50]))
        #expect(!ratio.roundsDisagree)
        #expect(ratio.isInconclusive)
        #expect(
            BenchReport.ratioLines([ratio], rounds: 3)
                == [
                    "a / b throughput  1.05 ± 0.24  (rounds 1.01–1.50)  noisy: ± 0.24 is more than the distance from 1 (0.05): no conclusion"
                ]
        )
        let clear = RatioSummary(key: "k", label: "a / b throughput", spread: Spread([1.22, 1.38, 1.68]))
        #expect(!clear.isInconclusive)
    }

    @Test func theComparisonIsNamedForWhatItIs() {
        let rounds = Self.rounds().map { $0 + [Self.result("nginx", rps: 40_000, p99: 2500, proxied: false)] }
        let labels = RatioSummary.compute(rounds, comparison: "nginx").map(\.label)
        #expect(labels.contains("steady / nginx throughput"))
    }

    @Test func theHTTPSScenariosAreComparedAndReportedPerProxyCore() {
        let rounds = [
            [
                Self.result("steady-tls", rps: 40_000, p99: 2000),
                Self.result("intercept", rps: 30_000, p99: 2500),
                Self.result("new-tunnels", rps: 1_000, p99: 90_000),
                Self.result("resumed-tunnels", rps: 1_500, p99: 60_000),
                Self.result("mitmproxy", rps: 1_000, p99: 50_000, proxied: false),
            ]
        ]
        let ratios = RatioSummary.compute(rounds, comparison: nil)
        #expect(ratios.first { $0.key == "intercept_over_steady_tls" }?.spread.median == 0.75)
        #expect(ratios.first { $0.key == "intercept_over_mitmproxy" }?.spread.median == 30)
        #expect(ratios.first { $0.key == "intercept_over_steady_tls_per_core" }?.spread.median == 0.75)
        let table = BenchReport.table(
            ScenarioSummary.group(rounds),
            ratios: ratios,
            idle: nil,
            settings: .init(connections: 64, durationSeconds: 10, warmupSeconds: 2, rounds: 1)
        )
        let lines = table.split(separator: "\n")
        for (label, value) in [
            ("intercept / steady-tls throughput", "0.75"), ("intercept / steady-tls per proxy core", "0.75"),
            ("intercept / mitmproxy throughput", "30.00"),
        ] {
            #expect(lines.contains { $0.hasPrefix(label + " ") && $0.hasSuffix(" " + value) }, "\(label) \(value)")
        }
        // 10 s of requests for 5 s of proxy CPU each.
        #expect(
            table.contains(
                "per proxy core (requests, or tunnels, per second of its CPU): steady-tls 80,000, intercept 60,000, new-tunnels 2,000, resumed-tunnels 3,000"
            )
        )
        // 1 / 80,000 and 1 / 60,000 of a CPU second.
        #expect(
            table.contains(
                "proxy CPU per request: steady-tls 12.5 µs, intercept 16.7 µs; the client's TLS layer 4.2 µs a request"
            )
        )
        #expect(
            !BenchReport.table(ScenarioSummary.group(Self.rounds()), ratios: [], idle: nil, settings: Self.settings)
                .contains("per proxy core")
        )
    }

    /// What DPoP costs, per round: the proxy's extra CPU per request, in microseconds and in
    /// signatures of that round's openssl speed, and the p99s' difference.
    @Test func dpopIsComparedWithSteadyInCPUPerRequestAndSignatures() throws {
        let rounds = [12.5, 10.0].map { signature in
            var dpop = Self.result("dpop", rps: 20_000, p99: 2300)
            dpop.signatureMicroseconds = signature
            return [Self.result("steady", rps: 50_000, p99: 2000), dpop]
        }
        let comparison = try #require(DPoPComparison.compute(ScenarioSummary.group(rounds)))
        // 500,000 and 200,000 requests for 5 s of proxy CPU each.
        #expect(comparison.steadyCPUMicroseconds.median == 10)
        #expect(comparison.dpopCPUMicroseconds.median == 25)
        #expect(comparison.extraInSignatures == Spread([1.2, 1.5]))
        let table = BenchReport.table(ScenarioSummary.group(rounds), ratios: [], idle: nil, settings: Self.settings)
        for line in [
            "proxy CPU per request: steady 10.0 µs, dpop 25.0 µs",
            "dpop extra CPU per request  15.0 µs",
            "dpop extra CPU / one ES256 signature  1.35 (rounds 1.20–1.50) × (a signature 11.2 (rounds 10.0–12.5) µs, openssl speed ecdsap256)",
            "dpop p99 - steady p99  +0.30 ms",
        ] {
            #expect(table.contains(line + "\n"), "\(line)\n\(table)")
        }
        let json = try JSONSerialization.jsonObject(
            with: BenchReport.json(ScenarioSummary.group(rounds), ratios: [], idle: nil, settings: Self.settings)
        )
        let dpop = try #require((json as? [String: Any])?["dpop"] as? [String: Any])
        #expect((dpop["extra_cpu_in_signatures"] as? [String: Any])?["median"] as? Double == 1.35)
        #expect(DPoPComparison.compute(ScenarioSummary.group(Self.rounds())) == nil)
        #expect(
            OpenSSLSpeed.signMicroseconds(fromMachineReadable: "+DTP:256:sign:ecdsa:3\n+F4:3:256:50000.0:20000.0\n")
                == 20
        )
    }

    @Test func bareOutputNamesGoUnderBenchResults() {
        #expect(outputPath("r.json") == "bench-results/r.json")
        #expect(outputPath("out/r.svg") == "out/r.svg")
        #expect(outputPath("/tmp/r.json") == "/tmp/r.json")
    }

    @Test(arguments: [
        (LoadGenerator.Phase.measuring, 2500, 5, 100_000, "steady, round 2 of 3: 2.5 s of 5 s, 40,000 req/s so far"),
        (LoadGenerator.Phase.warmup, 500, 1, 0, "steady, round 2 of 3: warming up, 0.5 s of 1 s"),
    ])
    func theProgressLineSaysWhereTheRunIs(
        phase: LoadGenerator.Phase,
        elapsedMilliseconds: Int64,
        totalSeconds: Int64,
        completed: Int,
        expected: String
    ) {
        let text = ProgressLine.text(
            label: "steady, round 2 of 3",
            phase: phase,
            elapsed: .milliseconds(elapsedMilliseconds),
            of: .seconds(totalSeconds),
            completed: completed
        )
        #expect(text == expected)
    }

    /// docs/benchmarks.md shows the report's own words: every column and ratio name appears there.
    @Test func theBenchmarksPageUsesTheReportsNames() throws {
        let readme = try String(
            contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/benchmarks.md").path,
            encoding: .utf8
        )
        let ratioLabels = RatioSummary.compute(
            Self.rounds().map { $0 + [Self.result("nginx", rps: 1, p99: 1)] },
            comparison: "nginx"
        )
        .map(\.label)
        for name in BenchReport.speedColumns + BenchReport.tokenColumns + BenchReport.sessionColumns + ratioLabels {
            #expect(readme.contains(name), "docs/benchmarks.md does not say '\(name)'")
        }
    }
}
