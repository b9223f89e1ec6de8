import BearerCore
import BearerTestSupport
import Foundation
import Testing

@testable import bearer_bench

/// `--soak`: the options it sets, the growth it computes, and a short soak against the built proxy.
@Suite struct SoakTests {
    @Test func aSoakIsOneRoundOfExpiryAtABoundedRate() throws {
        let options = try BenchOptions.parse(["--soak", "30m"])
        #expect(options.scenarios == [.expiry])
        #expect(options.duration == .seconds(1800))
        #expect(options.repeats == 1)
        #expect(options.rate == 1000)
        #expect(options.sampleEvery == .seconds(5))
        let intercept = try BenchOptions.parse(["--soak", "10m", "--scenario", "intercept", "--rate", "300"])
        #expect(intercept.scenarios == [.intercept], "nothing run beside it")
        #expect(intercept.rate == 300)
        #expect(throws: BenchOptions.ParseError.self) {
            try BenchOptions.parse(["--soak", "1m", "--scenario", "fleet"])
        }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--soak", "1m", "--sessions", "2"]) }
    }

    static func samples(_ resident: [Double], descriptors: [Int]) -> [SoakSampler.Sample] {
        zip(resident, descriptors).enumerated().map { index, pair in
            SoakSampler.Sample(seconds: Double(index) * 60, residentMiB: pair.0, descriptors: pair.1, logQueueBytes: 0)
        }
    }

    @Test func growthIsMeasuredFromAfterTheWarmUpToTheEnd() throws {
        let result = try #require(Self.someResult())
        // 30 minutes sampled each minute: the warm-up (3 minutes) may grow; after it, flat.
        let flat = SoakResult(
            scenario: "expiry",
            samples: Self.samples(
                [10, 20, 30] + Array(repeating: 40, count: 28),
                descriptors: Array(repeating: 100, count: 31)
            ),
            durationSeconds: 1800,
            result: result
        )
        #expect(flat.warmupSeconds == 180)
        #expect(flat.residentGrowth == 0)
        #expect(flat.isFlat)
        // A leak: memory climbs 1 MiB a minute after the warm-up.
        let leaking = SoakResult(
            scenario: "expiry",
            samples: Self.samples((0...30).map { 40 + Double($0) }, descriptors: Array(repeating: 100, count: 31)),
            durationSeconds: 1800,
            result: result
        )
        #expect((leaking.residentGrowth ?? 0) > 50)
        #expect(!leaking.isFlat)
        #expect(leaking.text.contains("verdict: GROWS"))
        // Descriptors that are never closed.
        let descriptors = SoakResult(
            scenario: "expiry",
            samples: Self.samples(Array(repeating: 40, count: 31), descriptors: (0...30).map { 100 + 2 * $0 }),
            durationSeconds: 1800,
            result: result
        )
        #expect(!descriptors.isFlat)
    }

    /// A short soak against the built proxy: samples come, one connection in eight rotates (new
    /// connections keep reaching the proxy), every request is answered and each storm costs one
    /// token call. The verdict itself is not asserted: seconds are no soak.
    @Test func aShortSoakSamplesTheProxyUnderTheStorm() throws {
        let bench = try shortBench(connections: 8) {
            $0.proxyWorkers = 2
            $0.rate = 400
        }
        defer { bench.shutdown() }
        bench.soak = SoakPlan(sampleEvery: .milliseconds(250))
        let result = try bench.run(.expiry)
        let soak = try #require(bench.soakResults.first)
        #expect(soak.samples.count >= 4)
        #expect(soak.samples.allSatisfy { $0.residentMiB > 0 && $0.descriptors > 0 })
        #expect(soak.samples.allSatisfy { $0.logQueueBytes != nil }, "the admin's log queue was not read")
        #expect(soak.allAnswered, "\(result.errors), \(result.client401s) 401s")
        #expect(result.expiryEvents >= 2)
        #expect(
            result.refreshesPerExpiry == 1,
            "token calls \(result.tokenCalls) for \(result.expiryEvents) expiry events"
        )
        // 400 requests a second over 2 s, paced: rotation does not escape the rate.
        #expect(result.requests < 1200, "\(result.requests) requests: the rotating connections ignored --rate")
        #expect(soak.text.contains("token calls \(result.tokenCalls) for \(result.expiryEvents) expiry events"))
        #expect(SoakResult.svg([soak]).contains("<polyline"))
    }

    static func someResult() -> ScenarioResult? {
        ScenarioResult(
            name: "expiry",
            proxies: 1,
            connections: 8,
            durationSeconds: 1800,
            requests: 1000,
            requestsPerSecond: 1,
            latency: LatencyStatistics(microseconds: [1]),
            errors: [:],
            statuses: [:],
            client401s: 0,
            tokenCalls: 1800,
            expiryEvents: 1800,
            replays: 0,
            maxTimesSeenUpstream: 1,
            proxyPeakRSSMiB: nil,
            proxyCPUSeconds: nil,
            resumedHandshakes: 0,
            series: [],
            expiryTimes: [],
            refreshTimes: [],
            sessions: []
        )
    }

    @Test func h2loadsTotalsAreRead() {
        let output = """
            finished in 5.00s, 1198.40 req/s, 40.02KB/s
            requests: 5992 total, 6120 started, 5992 done, 5990 succeeded, 2 failed, 0 errored, 0 timeout
            status codes: 5990 2xx, 0 3xx, 2 4xx, 0 5xx
            """
        let counts = H2LoadCounts(output)
        #expect(counts.succeeded == 5990)
        #expect(counts.failed == 2)
        #expect(counts.errored == 0)
        #expect(counts.statuses == [2: 5990, 3: 0, 4: 2, 5: 0])
    }

    /// h2-expiry against the built proxy: HTTP/2 clients under the storm, every request answered with
    /// a 2xx, one token call per expiry, and the soak's samples.
    @Test(.requires(.h2load)) func h2ExpiryAnswersEveryStreamWithOneTokenCallPerExpiry() throws {
        let bench = try shortBench(connections: 4) { $0.proxyWorkers = 2 }
        defer { bench.shutdown() }
        bench.soak = SoakPlan(sampleEvery: .milliseconds(500))
        let result = try bench.run(.h2Expiry)
        #expect(result.requests > 0)
        #expect(result.errors.isEmpty, "\(result.errors)")
        #expect(result.expiryEvents >= 2)
        #expect(
            result.refreshesPerExpiry == 1,
            "token calls \(result.tokenCalls) for \(result.expiryEvents) expiry events"
        )
        #expect(result.replays > 0, "the storm was not exercised")
        #expect((bench.soakResults.first?.samples.count ?? 0) >= 2)
    }
}
