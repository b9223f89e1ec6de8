import BearerCore
import BearerTestSupport
import Foundation
import Testing

@testable import bearer_bench

/// A short bench run against the built proxy: checks the report's invariants, never its speed.
@Suite struct BenchSmokeTests {
    @Test func expiryStormCostsOneTokenCallPerExpiryAndNoClient401s() throws {
        let bench = try shortBench(connections: 8) { $0.proxyWorkers = 2 }
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

/// `--sessions 3` against the built proxy: three APIs whose authorities refuse each other's tokens, each
/// revoking on its own schedule; each session's token calls are its own API's expiry events.
@Suite struct BenchSessionsSmokeTests {
    @Test func eachSessionCostsOneTokenCallPerExpiryOfItsOwnAPIAndNoClient401s() throws {
        let bench = try shortBench(connections: 12) {
            $0.proxyWorkers = 2
            $0.sessions = 3
        }
        defer { bench.shutdown() }
        let steady = try bench.run(.steady)
        let expiry = try bench.run(.expiry)
        for result in [steady, expiry] {
            #expect(result.sessions.map(\.name) == ["default", "s2", "s3"])
            #expect(result.errorCount == 0, "\(result.name): \(result.errors)")
            for session in result.sessions {
                #expect(session.requests > 0, "\(result.name): session \(session.name) completed no request")
                #expect(session.client401s == 0, "\(result.name): session \(session.name) saw 401s")
            }
        }
        #expect(steady.sessions.allSatisfy { $0.tokenCalls == 0 }, "\(steady.sessions)")
        for session in expiry.sessions {
            #expect(session.expiryEvents >= 2, "session \(session.name): \(session.expiryEvents) expiry events")
            #expect(
                session.tokenCalls == session.expiryEvents,
                "session \(session.name): \(session.tokenCalls) token calls for \(session.expiryEvents) expiry events"
            )
        }
        #expect(expiry.replays > 0, "the storm was not exercised")
    }
}

/// The https scenarios against the built proxy: through intercepted tunnels every request is
/// answered 200 with the token (the mock API accepts no other), and new tunnels complete.
@Suite struct BenchInterceptSmokeTests {
    @Test func interceptAndNewTunnelsCompleteEveryRequestWithTheToken() throws {
        let bench = try shortBench(connections: 8) { $0.proxyWorkers = 1 }
        defer { bench.shutdown() }
        for scenario in [BenchOptions.Scenario.steadyTLS, .intercept, .newTunnels, .resumedTunnels] {
            let result = try bench.run(scenario)
            #expect(result.requests > 0, "\(result.name) completed no request")
            #expect(result.statuses.isEmpty, "\(result.name): answers other than 2xx: \(result.statuses)")
            #expect(result.errorCount == 0, "\(result.name): \(result.errors)")
            #expect(result.proxyCPUSeconds ?? 0 > 0)
            if scenario == .resumedTunnels {
                #expect(result.resumedHandshakes > 0, "no tunnel resumed its TLS session")
            } else if scenario == .newTunnels {
                #expect(result.resumedHandshakes == 0, "new-tunnels resumed \(result.resumedHandshakes) sessions")
            }
        }
    }
}

/// The DPoP scenarios against the built proxy: every request through a DPoP-bound token with a proof
/// the API accepts (it checks one in 64 with OpenSSL's verifier, and each needs a bound token), and
/// under the expiry storm one token call per expiry and no 401 reaching a client.
@Suite struct BenchDPoPSmokeTests {
    @Test func dpopAndItsExpiryStormCostOneTokenCallPerExpiryAndNoClient401s() throws {
        let bench = try shortBench(connections: 8) { $0.proxyWorkers = 2 }
        defer { bench.shutdown() }
        let dpop = try bench.run(.dpop)
        let storm = try bench.run(.dpopExpiry)
        for result in [dpop, storm] {
            #expect(result.requests > 0, "\(result.name) completed no request")
            #expect(result.client401s == 0, "\(result.name): clients saw \(result.client401s) 401s")
            #expect(result.errorCount == 0, "\(result.name): \(result.errors)")
            #expect(result.maxTimesSeenUpstream <= 2)
        }
        let api = try #require(bench.dpopAPI?.dpop)
        #expect(api.failures.isEmpty, "the API refused proofs: \(api.failures.prefix(3))")
        #expect(!api.proofs.isEmpty, "no proof was checked")
        #expect(dpop.tokenCalls == 0)
        #expect(dpop.signatureMicroseconds ?? 0 > 0, "openssl speed gave no figure")
        #expect(storm.expiryEvents >= 2)
        #expect(
            storm.refreshesPerExpiry == 1,
            "token calls \(storm.tokenCalls) for \(storm.expiryEvents) expiry events"
        )
        #expect(storm.replays > 0, "the storm was not exercised")
    }
}

/// The fleet scenario against the built proxy and Debian's redis-server: its invariants, never its speed.
@Suite(
    .enabled(
        if: ExternalTool.redisServer.isInstalledOrCI,
        Comment(rawValue: ExternalTool.redisServer.skipReason)
    )
)
struct BenchFleetSmokeTests {
    @Test func aFleetUnderAnExpiryStormCostsOneTokenCallPerExpiryAndNoClient401s() throws {
        let bench = try shortBench(connections: 12) {
            $0.proxyWorkers = 1
            $0.proxies = 3
        }
        defer { bench.shutdown() }
        let fleet = try bench.run(.fleet)
        #expect(fleet.proxies == 3)
        #expect(fleet.requests > 0)
        #expect(fleet.client401s == 0, "clients saw \(fleet.client401s) 401s")
        #expect(fleet.errorCount == 0, "\(fleet.errors)")
        #expect(fleet.expiryEvents >= 2)
        #expect(
            fleet.refreshesPerExpiry == 1,
            "token calls \(fleet.tokenCalls) for \(fleet.expiryEvents) expiry events"
        )
        #expect(bench.tokenServer.reuseDetections.load(ordering: .relaxed) == 0)
    }
}

/// A bench with short runs (2 s after 0.5 s, a revocation every 0.5 s) against the proxy built next
/// to the tests.
func shortBench(connections: Int, _ adjust: (inout BenchOptions) -> Void) throws -> Bench {
    let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    let proxyBinary = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent(
        "bearer-proxy"
    ).path
    let binary = try #require(ChildProxy.locateBinary(proxyBinary), "bearer-proxy is not built next to the tests")
    var options = BenchOptions()
    options.connections = connections
    options.duration = .seconds(2)
    options.warmup = .milliseconds(500)
    options.expireEvery = .milliseconds(500)
    adjust(&options)
    return try Bench(options: options, proxyBinary: binary, log: { _ in })
}
