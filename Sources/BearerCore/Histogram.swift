/// Latency buckets in seconds, from a fast local upstream to a slow refresh.
package let histogramBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

package struct Histogram: Sendable {
    var counts = [Int](repeating: 0, count: histogramBuckets.count)
    var sum: Double = 0
    var count = 0

    package init() {}

    package mutating func record(_ seconds: Double) {
        self.count += 1
        self.sum += seconds
        for (index, bound) in histogramBuckets.enumerated() where seconds <= bound {
            self.counts[index] += 1
            return
        }
    }

    package mutating func add(_ other: Histogram) {
        for index in self.counts.indices { self.counts[index] += other.counts[index] }
        self.sum += other.sum
        self.count += other.count
    }

    package func render(_ name: String, help: String) -> String {
        "# HELP \(name) \(help)\n# TYPE \(name) histogram\n" + self.samples(name, labels: "")
    }

    /// The bucket, sum and count lines; `labels` (`session="x",`) go before `le`.
    package func samples(_ name: String, labels: String) -> String {
        var text = ""
        var cumulative = 0
        for (index, bound) in histogramBuckets.enumerated() {
            cumulative += self.counts[index]
            text += "\(name)_bucket{\(labels)le=\"\(prometheusNumber(bound))\"} \(cumulative)\n"
        }
        let own = labels.isEmpty ? "" : "{\(labels.dropLast())}"
        text +=
            "\(name)_bucket{\(labels)le=\"+Inf\"} \(self.count)\n\(name)_sum\(own) \(prometheusNumber(self.sum))\n\(name)_count\(own) \(self.count)\n"
        return text
    }
}

/// A sample value as Prometheus writes it: whole numbers without a fraction.
package func prometheusNumber(_ value: Double) -> String {
    if value == value.rounded() && abs(value) < 1e15 { return String(Int(value)) }
    return String(value)
}
