import BearerCore
import BearerIO
import Foundation
import Glibc

/// `grpc`: unary gRPC calls through the proxy to an h2c gRPC upstream, steady and under expiry's
/// storm, at each of `--grpc-streams` calls in flight. Both ends are the bench's own, on the
/// project's HTTP/2 machines (`GRPCLoad`, `GRPCMockUpstream`): h2load counts HTTP statuses, and a
/// gRPC refusal is a 200, so it cannot tell a call that failed; Python's grpcio answers a few
/// thousand calls a second, which would measure the server, not the proxy.
extension Bench {
    /// Calls in flight on each client connection (the proxy lets 100 be open on one).
    static let grpcStreamsPerConnection = 32

    /// `grpc-steady-N` and `grpc-N` (the storm) for each N of `--grpc-streams`, each its own proxy.
    func runGRPC(round: String) throws -> [ScenarioResult] {
        self.tokenServer.update { $0.expiresIn = nil }
        let upstream = try GRPCMockUpstream(authority: self.authority)
        defer { upstream.stop() }
        let config = self.proxyConfig(upstream: "http://127.0.0.1:\(upstream.port)", extra: "upstream_http2 = on")
        var results: [ScenarioResult] = []
        for streams in self.options.grpcStreams {
            for expiring in [false, true] {
                let result = try self.withProxy(config: config) { proxy, target in
                    self.measureGRPC(
                        proxy,
                        target.address,
                        upstream,
                        streams: streams,
                        expiring: expiring,
                        round: round
                    )
                }
                results.append(result)
            }
        }
        return results
    }

    private func measureGRPC(
        _ proxy: ChildProxy,
        _ address: SocketAddress,
        _ upstream: GRPCMockUpstream,
        streams: Int,
        expiring: Bool,
        round: String
    ) -> ScenarioResult {
        let name = expiring ? "grpc-\(streams)" : "grpc-steady-\(streams)"
        let perConnection = min(streams, Self.grpcStreamsPerConnection)
        let connections = max(1, streams / perConnection)
        self.log(
            "\(round.isEmpty ? name : "\(name), \(round)"): \(connections) connections × \(perConnection) unary calls in flight, \(formatSeconds(self.options.warmup)) warm-up, \(formatSeconds(self.options.duration)) measured"
        )
        let tokenCallsBefore = self.tokenServer.callCount
        let refusedBefore = upstream.refused.load(ordering: .relaxed)
        let cpuBefore = proxy.cpuSeconds
        let start = Instant.now() + self.options.warmup
        let end = start + self.options.duration
        let storm =
            expiring
            ? ExpiryTimer(every: self.options.expireEvery, until: end - .milliseconds(200), authority: self.authority)
            : nil
        let load = GRPCLoad(address: address, streams: perConnection)
        let outcome = load.run(connections: connections, start: start, end: end)
        // Every revocation, the warm-up's too: the token calls counted are the whole run's.
        let expiries = storm?.stop() ?? []
        // A revocation just before the end is refreshed a moment later: let that call land.
        usleep(300_000)
        let measured = self.options.duration.seconds
        return ScenarioResult(
            name: name,
            proxies: 1,
            connections: streams,
            durationSeconds: measured,
            requests: outcome.ok,
            requestsPerSecond: Double(outcome.ok) / max(measured, 0.001),
            latency: LatencyStatistics(microseconds: []),
            errors: outcome.errors,
            statuses: [:],
            client401s: outcome.errors[GRPCLoad.unauthenticated] ?? 0,
            tokenCalls: self.tokenServer.callCount - tokenCallsBefore,
            expiryEvents: expiries.count,
            replays: upstream.refused.load(ordering: .relaxed) - refusedBefore,
            maxTimesSeenUpstream: 0,
            proxyPeakRSSMiB: proxy.memory.peakMiB,
            proxyCPUSeconds: proxy.cpuSeconds - cpuBefore,
            series: [],
            expiryTimes: expiries.map { ($0 - start).seconds },
            refreshTimes: []
        )
    }
}
