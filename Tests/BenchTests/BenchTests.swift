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
            "r.svg",
            "--target", "http://127.0.0.1:9000/", "--idle-connections", "10000",
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
    }

    @Test func defaultsToAllScenarios() throws {
        #expect(try BenchOptions.parse([]).scenarios == [.direct, .steady, .expiry, .proactive])
    }

    @Test func rejectsBadOptions() {
        #expect(throws: BenchOptions.ParseError(description: "Unknown option '--conections'")) {
            try BenchOptions.parse(["--conections", "1"])
        }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--scenario", "burst"]) }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--connections", "0"]) }
    }
}

@Suite struct ReportTests {
    static func result(_ name: String, rps: Double, p99: UInt32, expiries: Int = 0, calls: Int = 0) -> ScenarioResult {
        ScenarioResult(
            name: name,
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
            proxyPeakRSSMiB: 20,
            proxyCPUSeconds: 5,
            series: [TimeSeriesPoint(startSeconds: 0, requestsPerSecond: rps, p99Milliseconds: 1)],
            expiryTimes: [1],
            refreshTimes: [1.001]
        )
    }

    @Test func jsonKeepsTheDocumentedNames() throws {
        let results = [
            Self.result("direct", rps: 100_000, p99: 1000), Self.result("steady", rps: 50_000, p99: 2000),
            Self.result("expiry", rps: 45_000, p99: 3000, expiries: 10, calls: 10),
        ]
        let data = BenchReport.json(results, ratios: BenchRatios(results), idle: nil)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let scenarios = try #require(object["scenarios"] as? [[String: Any]])
        #expect(scenarios.count == 3)
        for key in [
            "name", "connections", "duration_s", "requests", "requests_per_second", "latency_ms", "errors",
            "client_401s",
            "token_calls", "expiry_events", "refreshes_per_expiry", "replays", "max_times_seen_upstream",
            "proxy_peak_rss_mib", "proxy_cpu_s",
        ] {
            #expect(scenarios[2][key] != nil, "missing \(key)")
        }
        let latency = try #require(scenarios[2]["latency_ms"] as? [String: Double])
        #expect(Set(latency.keys) == ["p50", "p99", "p999", "max"])
        #expect(scenarios[2]["refreshes_per_expiry"] as? Double == 1)
        let ratios = try #require(object["ratios"] as? [String: Any])
        #expect(ratios["steady_over_direct"] as? Double == 0.5)
        #expect(ratios["expiry_over_steady"] as? Double == 0.9)
        #expect(ratios["expiry_p99_over_steady_p99"] as? Double == 1.5)
    }

    @Test func tableAndChartShowEveryScenario() {
        let results = [
            Self.result("steady", rps: 50_000, p99: 2000),
            Self.result("expiry", rps: 45_000, p99: 3000, expiries: 3, calls: 3),
        ]
        let table = BenchReport.table(
            results,
            ratios: BenchRatios(results),
            idle: IdleResult(connections: 10, established: 10, proxyRSSMiB: 30, proxyRSSBeforeMiB: 10, stopReason: nil)
        )
        #expect(table.contains("steady"))
        #expect(table.contains("expiry / steady throughput:  0.900"))
        #expect(table.contains("idle: 10 of 10 keep-alive connections held; proxy RSS 30.0 MiB"))
        let svg = SVGChart.render(results)
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.contains("expiry: 45000 req/s"))
        #expect(svg.contains("stroke=\"#d62728\""), "expiry events are marked")
    }
}
