import Foundation

/// An axis with round ticks: `0, 20k, 40k, 60k req/s` rather than its data's maximum (`84645`), so a
/// reader can read a value off the chart.
struct ChartAxis {
    enum Scale {
        case linear
        /// Decades: latencies spanning 0.5 ms to 500 ms stay readable on one axis.
        case logarithmic
    }

    let scale: Scale
    let lower: Double
    let upper: Double
    let ticks: [Double]

    /// 0 up to a round value at or above `maximum`, in about `count` steps of 1, 2, 2.5 or 5 × 10ⁿ.
    static func linear(upTo maximum: Double, count: Int = 4) -> ChartAxis {
        let step = Self.roundStep(max(maximum, 1e-9) / Double(count))
        let top = (maximum / step).rounded(.up) * step
        let ticks = stride(from: 0, through: top + step / 2, by: step).map { $0 }
        return ChartAxis(scale: .linear, lower: 0, upper: max(top, step), ticks: ticks)
    }

    /// Whole decades around `minimum...maximum` (both positive).
    static func logarithmic(from minimum: Double, to maximum: Double) -> ChartAxis {
        let low = floor(log10(max(minimum, 1e-3)))
        let high = max(ceil(log10(max(maximum, 1e-3))), low + 1)
        let ticks = stride(from: low, through: high, by: 1).map { pow(10, $0) }
        return ChartAxis(scale: .logarithmic, lower: pow(10, low), upper: pow(10, high), ticks: ticks)
    }

    /// Where `value` falls, from 0 (lower) to 1 (upper), clamped.
    func fraction(_ value: Double) -> Double {
        let fraction =
            switch self.scale {
            case .linear: (value - self.lower) / (self.upper - self.lower)
            case .logarithmic: (log10(max(value, self.lower)) - log10(self.lower)) / log10(self.upper / self.lower)
            }
        return min(max(fraction, 0), 1)
    }

    /// 1, 2, 2.5 or 5 × 10ⁿ, the smallest at or above `raw`.
    static func roundStep(_ raw: Double) -> Double {
        let magnitude = pow(10, floor(log10(raw)))
        let multiple = [1, 2, 2.5, 5, 10].first { $0 * magnitude >= raw * (1 - 1e-9) } ?? 10
        return multiple * magnitude
    }
}

/// `0`, `500`, `2.5k`, `40k`, `1.2M`: a count as an axis label.
func compactCount(_ value: Double) -> String {
    switch abs(value) {
    case 1_000_000...: trimmed(value / 1_000_000) + "M"
    case 1000...: trimmed(value / 1000) + "k"
    default: trimmed(value)
    }
}

/// `0.1 ms`, `10 ms`, `1000 ms`: always milliseconds, so that a latency label never reads like a
/// point on the time axis.
func compactMilliseconds(_ value: Double) -> String {
    trimmed(value) + " ms"
}

/// `2.5`, `40`, `0.1`: at most two decimals, none that are zero.
func trimmed(_ value: Double) -> String {
    var text = String(format: "%.2f", value)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text
}
