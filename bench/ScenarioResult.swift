/// Every figure of one scenario run.
struct ScenarioResult {
    var name: String
    var connections: Int
    var durationSeconds: Double
    var requests: Int
    var requestsPerSecond: Double
    var latency: LatencyStatistics
    var errors: [String: Int]
    /// Responses that were not 2xx, by status (401s included).
    var statuses: [Int: Int]
    var client401s: Int
    var tokenCalls: Int
    var expiryEvents: Int
    var replays: Int
    var maxTimesSeenUpstream: Int
    var proxyPeakRSSMiB: Double?
    var proxyCPUSeconds: Double?
    var series: [TimeSeriesPoint]
    /// Seconds since the measurement began.
    var expiryTimes: [Double]
    var refreshTimes: [Double]

    var errorCount: Int { self.errors.values.reduce(0, +) }

    var refreshesPerExpiry: Double? {
        self.expiryEvents > 0 ? Double(self.tokenCalls) / Double(self.expiryEvents) : nil
    }
}

/// Ratios between scenarios measured in the same run.
struct BenchRatios {
    var steadyOverDirect: Double?
    var expiryOverSteady: Double?
    var expiryP99OverSteadyP99: Double?
    var steadyOverTarget: Double?

    init(_ results: [ScenarioResult]) {
        func find(_ name: String) -> ScenarioResult? { results.first { $0.name == name } }
        func ratio(_ a: Double?, _ b: Double?) -> Double? {
            guard let a, let b, b > 0 else { return nil }
            return a / b
        }
        let direct = find("direct")
        let steady = find("steady")
        let expiry = find("expiry")
        let target = find("target")
        self.steadyOverDirect = ratio(steady?.requestsPerSecond, direct?.requestsPerSecond)
        self.expiryOverSteady = ratio(expiry?.requestsPerSecond, steady?.requestsPerSecond)
        self.expiryP99OverSteadyP99 = ratio(expiry?.latency.p99, steady?.latency.p99)
        self.steadyOverTarget = ratio(steady?.requestsPerSecond, target?.requestsPerSecond)
    }
}

/// Holding many idle keep-alive connections: how much memory the proxy needs for them.
struct IdleResult {
    var connections: Int
    var established: Int
    var proxyRSSMiB: Double
    var proxyRSSBeforeMiB: Double
    /// Why fewer than `connections` were established, if they were.
    var stopReason: String?
}
