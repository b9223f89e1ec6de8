/// Every figure of one scenario run.
struct ScenarioResult {
    var name: String
    /// Proxy processes the load went through (0: straight at the API or at another proxy).
    var proxies = 1
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
    /// Tunnels whose handshake resumed a TLS session (resumed-tunnels).
    var resumedHandshakes = 0
    var series: [TimeSeriesPoint]
    /// Seconds since the measurement began.
    var expiryTimes: [Double]
    var refreshTimes: [Double]
    /// With `--sessions` above 1: each session's figures, the default session's first (else empty).
    var sessions: [SessionResult] = []
    /// dpop: one ECDSA P-256 signature's CPU time, measured right after the round (`OpenSSLSpeed`).
    var signatureMicroseconds: Double? = nil

    var errorCount: Int { self.errors.values.reduce(0, +) }

    /// Requests per second of the proxy's CPU (nil without a proxy).
    var requestsPerProxyCPUSecond: Double? {
        guard let cpu = self.proxyCPUSeconds, cpu > 0 else { return nil }
        return Double(self.requests) / cpu
    }

    /// Microseconds of the proxy's CPU per request (nil without a proxy).
    var proxyCPUMicrosecondsPerRequest: Double? {
        guard let cpu = self.proxyCPUSeconds, self.requests > 0 else { return nil }
        return cpu * 1_000_000 / Double(self.requests)
    }

    var refreshesPerExpiry: Double? {
        self.expiryEvents > 0 ? Double(self.tokenCalls) / Double(self.expiryEvents) : nil
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
