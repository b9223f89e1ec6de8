/// A figure measured once per round: its median and how far the rounds spread.
struct Spread: Equatable {
    var median: Double
    var minimum: Double
    var maximum: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        guard !sorted.isEmpty else {
            self.median = 0
            self.minimum = 0
            self.maximum = 0
            return
        }
        let middle = sorted.count / 2
        self.median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        self.minimum = sorted[0]
        self.maximum = sorted[sorted.count - 1]
    }

    var range: Double { self.maximum - self.minimum }

    /// Half the range relative to the median: the `±%` columns.
    var relativeHalfRange: Double {
        self.median > 0 ? self.range / 2 / self.median : 0
    }
}

/// One scenario over every round: median figures, their spread, and the invariants summed over the
/// rounds, so that a single client 401 or a request seen three times in any round shows.
struct ScenarioSummary {
    var name: String
    var rounds: [ScenarioResult]

    var connections: Int { self.rounds[0].connections }
    var proxies: Int { self.rounds[0].proxies }
    var requestsPerSecond: Spread { Spread(self.rounds.map(\.requestsPerSecond)) }
    var p50Milliseconds: Double { Spread(self.rounds.map(\.latency.p50Milliseconds)).median }
    var p99Milliseconds: Spread { Spread(self.rounds.map(\.latency.p99Milliseconds)) }
    var p999Milliseconds: Double { Spread(self.rounds.map(\.latency.p999Milliseconds)).median }
    var maxMilliseconds: Double { self.rounds.map(\.latency.maxMilliseconds).max() ?? 0 }
    var requests: Int { self.rounds.map(\.requests).reduce(0, +) }
    var errors: [String: Int] { self.rounds.reduce(into: [:]) { $0.merge($1.errors, uniquingKeysWith: +) } }
    var errorCount: Int { self.rounds.map(\.errorCount).reduce(0, +) }
    var client401s: Int { self.rounds.map(\.client401s).reduce(0, +) }
    var tokenCalls: Int { self.rounds.map(\.tokenCalls).reduce(0, +) }
    var expiryEvents: Int { self.rounds.map(\.expiryEvents).reduce(0, +) }
    var replays: Int { self.rounds.map(\.replays).reduce(0, +) }
    /// Each session's figures summed over the rounds, in the order of the first round.
    var sessions: [SessionResult] {
        guard let first = self.rounds.first else { return [] }
        return first.sessions.map { session in
            let same = self.rounds.compactMap { $0.sessions.first { $0.name == session.name } }
            return SessionResult(
                name: session.name,
                requests: same.map(\.requests).reduce(0, +),
                client401s: same.map(\.client401s).reduce(0, +),
                tokenCalls: same.map(\.tokenCalls).reduce(0, +),
                expiryEvents: same.map(\.expiryEvents).reduce(0, +)
            )
        }
    }
    var maxTimesSeenUpstream: Int { self.rounds.map(\.maxTimesSeenUpstream).max() ?? 0 }
    var proxyPeakRSSMiB: Double? { self.rounds.compactMap(\.proxyPeakRSSMiB).max() }
    var proxyCPUSeconds: Double? {
        let values = self.rounds.compactMap(\.proxyCPUSeconds)
        return values.isEmpty ? nil : Spread(values).median
    }
    /// Whether the load went through the proxy (the token columns mean something).
    var isThroughProxy: Bool { self.rounds[0].proxyPeakRSSMiB != nil }

    /// Requests (new-tunnels: tunnels) per second of the proxy's CPU, per round: what one core of it
    /// does, whatever else the machine was busy with.
    var requestsPerProxyCore: Spread? {
        let values = self.rounds.compactMap(\.requestsPerProxyCPUSecond)
        return values.isEmpty ? nil : Spread(values)
    }

    var refreshesPerExpiry: Double? {
        self.expiryEvents > 0 ? Double(self.tokenCalls) / Double(self.expiryEvents) : nil
    }

    /// The round with the median throughput: the one the chart draws.
    var representative: ScenarioResult {
        self.rounds.sorted { $0.requestsPerSecond < $1.requestsPerSecond }[(self.rounds.count - 1) / 2]
    }

    /// Groups results by scenario name, in the order the names first appear.
    static func group(_ rounds: [[ScenarioResult]]) -> [ScenarioSummary] {
        var summaries: [ScenarioSummary] = []
        for result in rounds.joined() {
            if let index = summaries.firstIndex(where: { $0.name == result.name }) {
                summaries[index].rounds.append(result)
            } else {
                summaries.append(ScenarioSummary(name: result.name, rounds: [result]))
            }
        }
        return summaries
    }
}

/// A comparison between two scenarios measured in the same rounds: the ratio per round, then its
/// median and spread. A ratio is inconclusive when the rounds fall on both sides of 1, or when its
/// spread (± half the rounds' range, as the report prints it) is larger than its distance from 1: on
/// that machine, at that moment, the two cannot be told apart, whatever the median says.
struct RatioSummary: Equatable {
    var key: String
    var label: String
    var spread: Spread

    /// ± half the range of the rounds.
    var halfRange: Double { self.spread.range / 2 }

    /// Some rounds say "faster", others "slower".
    var roundsDisagree: Bool { self.spread.minimum < 1 && self.spread.maximum > 1 }

    var isInconclusive: Bool { self.roundsDisagree || self.halfRange > abs(self.spread.median - 1) }

    /// steady / direct, steady / <comparison>, expiry / steady (throughput), expiry p99 / steady p99;
    /// each only when both sides ran.
    static func compute(_ rounds: [[ScenarioResult]], comparison: String?) -> [RatioSummary] {
        var definitions: [(key: String, label: String, value: ([String: ScenarioResult]) -> Double?)] = [
            ("steady_over_direct", "steady / direct throughput", { throughput($0["steady"], $0["direct"]) })
        ]
        if let comparison {
            definitions.append(
                (
                    "steady_over_\(comparison)", "steady / \(comparison) throughput",
                    { throughput($0["steady"], $0[comparison]) }
                )
            )
        }
        definitions += [
            (
                "intercept_over_steady_tls", "intercept / steady-tls throughput",
                { throughput($0["intercept"], $0["steady-tls"]) }
            ),
            (
                // On a shared machine the proxy's CPU per request moves less than its throughput.
                "intercept_over_steady_tls_per_core", "intercept / steady-tls per proxy core",
                { ratio($0["intercept"]?.requestsPerProxyCPUSecond, $0["steady-tls"]?.requestsPerProxyCPUSecond) }
            ),
            (
                "intercept_over_mitmproxy", "intercept / mitmproxy throughput",
                { throughput($0["intercept"], $0["mitmproxy"]) }
            ),
            ("expiry_over_steady", "expiry / steady throughput", { throughput($0["expiry"], $0["steady"]) }),
            (
                "expiry_p99_over_steady_p99", "expiry p99 / steady p99",
                { ratio($0["expiry"]?.latency.p99, $0["steady"]?.latency.p99) }
            ),
        ]
        // grpc: the storm against steady at each load it ran (`grpc-N` beside `grpc-steady-N`).
        let steadyGRPC = "grpc-steady-"
        let grpcLoads = Set(
            rounds.joined().map(\.name).filter { $0.hasPrefix(steadyGRPC) }.map { $0.dropFirst(steadyGRPC.count) }
        )
        for streams in grpcLoads.sorted(by: { (Int($0) ?? 0) < (Int($1) ?? 0) }) {
            let (storm, steady) = ("grpc-\(streams)", "\(steadyGRPC)\(streams)")
            definitions += [
                (
                    "grpc_\(streams)_over_steady", "grpc \(streams) streams: expiry / steady throughput",
                    { throughput($0[storm], $0[steady]) }
                ),
                (
                    // The load and the upstream share the machine with the proxy: per proxy core
                    // moves less than throughput.
                    "grpc_\(streams)_over_steady_per_core", "grpc \(streams) streams: expiry / steady per proxy core",
                    { ratio($0[storm]?.requestsPerProxyCPUSecond, $0[steady]?.requestsPerProxyCPUSecond) }
                ),
            ]
        }
        let byName = rounds.map { round in Dictionary(round.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }) }
        return definitions.compactMap { definition in
            let values = byName.compactMap(definition.value)
            guard values.count == rounds.count, !values.isEmpty else { return nil }
            return RatioSummary(key: definition.key, label: definition.label, spread: Spread(values))
        }
    }
}

private func throughput(_ a: ScenarioResult?, _ b: ScenarioResult?) -> Double? {
    ratio(a?.requestsPerSecond, b?.requestsPerSecond)
}

private func ratio(_ a: Double?, _ b: Double?) -> Double? {
    guard let a, let b, b > 0 else { return nil }
    return a / b
}
