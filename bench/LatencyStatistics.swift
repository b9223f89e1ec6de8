/// Percentiles over recorded latencies (microseconds), nearest-rank: p(q) is the smallest value
/// with at least q of the samples at or below it.
struct LatencyStatistics: Equatable {
    var count: Int
    var p50: Double
    var p99: Double
    var p999: Double
    var max: Double

    /// From unsorted samples in microseconds; all zero when there are none.
    init(microseconds samples: [UInt32]) {
        self.count = samples.count
        guard !samples.isEmpty else {
            self.p50 = 0
            self.p99 = 0
            self.p999 = 0
            self.max = 0
            return
        }
        let sorted = samples.sorted()
        func percentile(_ quantile: Double) -> Double {
            let rank = Int((quantile * Double(sorted.count)).rounded(.up))
            return Double(sorted[min(sorted.count, Swift.max(1, rank)) - 1])
        }
        self.p50 = percentile(0.50)
        self.p99 = percentile(0.99)
        self.p999 = percentile(0.999)
        self.max = Double(sorted[sorted.count - 1])
    }

    var p50Milliseconds: Double { self.p50 / 1000 }
    var p99Milliseconds: Double { self.p99 / 1000 }
    var p999Milliseconds: Double { self.p999 / 1000 }
    var maxMilliseconds: Double { self.max / 1000 }
}

/// One completed request: when it completed (since the measurement began) and how long it took.
struct Sample {
    var completedAtMicroseconds: UInt32
    var latencyMicroseconds: UInt32
}

/// Throughput and latency per time window: p99 for the chart, p50 and p99.9 beside it in a run
/// against your own stack's report.
struct TimeSeriesPoint: Equatable {
    var startSeconds: Double
    var requestsPerSecond: Double
    var p99Milliseconds: Double
    var p50Milliseconds: Double = 0
    var p999Milliseconds: Double = 0
}

func timeSeries(_ samples: [Sample], window: Double, duration: Double) -> [TimeSeriesPoint] {
    let windowMicros = UInt32(window * 1_000_000)
    // Whole windows only: a partial last window would show a false drop in throughput.
    let count = Int((duration / window + 1e-6).rounded(.down))
    guard count > 0, windowMicros > 0 else { return [] }
    var buckets = [[UInt32]](repeating: [], count: count)
    for sample in samples {
        let index = Int(sample.completedAtMicroseconds / windowMicros)
        if index < count { buckets[index].append(sample.latencyMicroseconds) }
    }
    // From whole microseconds: 3 × 0.1 would be 0.30000000000000004 in the JSON.
    return buckets.enumerated().map { index, latencies in
        let statistics = LatencyStatistics(microseconds: latencies)
        return TimeSeriesPoint(
            startSeconds: Double(UInt32(index) * windowMicros) / 1_000_000,
            requestsPerSecond: Double(latencies.count) * 1_000_000 / Double(windowMicros),
            p99Milliseconds: statistics.p99Milliseconds,
            p50Milliseconds: statistics.p50Milliseconds,
            p999Milliseconds: statistics.p999Milliseconds
        )
    }
}
