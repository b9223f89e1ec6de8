import BearerCore
import Foundation
import Testing

@testable import bearer_bench

/// A short bench run against the built proxy: checks the report's invariants, never its speed.
@Suite struct BenchSmokeTests {
    @Test func expiryStormCostsOneTokenCallPerExpiryAndNoClient401s() throws {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let proxyBinary = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent(
            "bearer-proxy"
        ).path
        let binary = try #require(ChildProxy.locateBinary(proxyBinary), "bearer-proxy is not built next to the tests")
        var options = BenchOptions()
        options.connections = 8
        options.duration = .seconds(2)
        options.warmup = .milliseconds(500)
        options.expireEvery = .milliseconds(500)
        options.proxyWorkers = 2
        let bench = try Bench(options: options, proxyBinary: binary, log: { _ in })
        defer { bench.shutdown() }
        let steady = try bench.run(.steady)
        let expiry = try bench.run(.expiry)
        for result in [steady, expiry] {
            #expect(result.requests > 0, "\(result.name) completed no request")
            #expect(result.client401s == 0, "\(result.name): clients saw \(result.client401s) 401s")
            #expect(result.errorCount == 0, "\(result.name): \(result.errors)")
            #expect(
                result.maxTimesSeenUpstream <= 2,
                "\(result.name): a request reached the upstream \(result.maxTimesSeenUpstream) times"
            )
        }
        #expect(steady.tokenCalls == 0)
        #expect(expiry.expiryEvents >= 2)
        #expect(
            expiry.refreshesPerExpiry == 1,
            "token calls \(expiry.tokenCalls) for \(expiry.expiryEvents) expiry events"
        )
        #expect(expiry.replays > 0, "the storm was not exercised")
        let idle = try bench.measureIdleConnections(20)
        #expect(idle.established == 20, "idle connections: \(idle.stopReason ?? "")")
        #expect(idle.proxyRSSMiB > 0)
    }
}
