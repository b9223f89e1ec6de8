import Foundation

/// The bench's picture, meant to be read in five seconds: one panel per scenario (its round with the
/// median throughput), throughput above and p99 latency below on one time axis, each expiry event a
/// red dashed line through both, each token-endpoint call a green triangle between them, one legend
/// on top.
///
/// Every panel uses the same throughput axis, so direct and steady compare at a glance, and the same
/// logarithmic latency axis, so a 500 ms storm spike and a 1 ms steady p99 both stay readable. A
/// window in which no request completed has no p99: the latency line has a gap there.
enum SVGChart {
    static let width = 960.0
    static let left = 80.0
    static let right = 24.0
    static let throughputHeight = 110.0
    /// Between the two plots: where the token calls are marked.
    static let markLane = 16.0
    static let latencyHeight = 80.0
    static let panelHeight = 24 + throughputHeight + markLane + latencyHeight + 22 + 16

    static let throughputColor = "#1f77b4"
    static let latencyColor = "#e6550d"
    static let expiryColor = "#d62728"
    static let tokenCallColor = "#2ca02c"

    /// What the title, the panels and the dashed lines are: the scenarios' expiry events, or the
    /// storms a run against your own stack forced.
    struct Labels {
        var title: String
        var subtitle: String
        var expiry: String
        /// What a panel's figures count the dashed lines as.
        var event = "expiry event"

        static let scenarios = Labels(
            title: "bearer-bench: throughput and p99 latency over time",
            subtitle: "each panel: the scenario's round with the median throughput, measured in windows of 100 ms",
            expiry: "expiry: every token revoked"
        )
        static let storms = Labels(
            title: "bearer-bench against your stack: throughput and p99 latency over time",
            subtitle: "each panel: one phase, steady then with storms, measured in windows of 100 ms",
            expiry: "storm: POST /refresh?park=1",
            event: "storm"
        )
    }

    static func render(_ results: [ScenarioResult], labels: Labels = .scenarios) -> String {
        let panels = results.filter { !$0.series.isEmpty }
        var document = SVGDocument()
        var top = Self.header(labels, into: &document)
        let scales = Scales(panels)
        for result in panels {
            Self.panel(result, scales: scales, top: top, event: labels.event, into: &document)
            top += Self.panelHeight
        }
        if panels.isEmpty {
            document.text("no scenario recorded a time series", x: Self.left, y: top + 20, size: 12, fill: "#555")
            top += 40
        }
        return document.finish(width: Self.width, height: top)
    }

    /// The axes every panel shares.
    struct Scales {
        let duration: Double
        let throughput: ChartAxis
        let latency: ChartAxis
        let timeTicks: [Double]

        init(_ panels: [ScenarioResult]) {
            let points = panels.flatMap(\.series)
            self.duration = max(panels.map(\.durationSeconds).max() ?? 1, 0.1)
            self.throughput = ChartAxis.linear(upTo: max(points.map(\.requestsPerSecond).max() ?? 1, 1))
            let latencies = points.map(\.p99Milliseconds).filter { $0 > 0 }
            self.latency = ChartAxis.logarithmic(from: latencies.min() ?? 1, to: latencies.max() ?? 10)
            let step = max(ChartAxis.roundStep(self.duration / 6), 0.1)
            self.timeTicks = stride(from: 0, through: self.duration + 1e-9, by: step).map { $0 }
        }
    }

    /// Title, what a panel is, and the legend; returns where the first panel starts.
    private static func header(_ labels: Labels, into document: inout SVGDocument) -> Double {
        document.text(labels.title, x: Self.left, y: 24, size: 15, weight: "bold")
        document.text(
            labels.subtitle,
            x: Self.left,
            y: 42,
            size: 12,
            fill: "#555"
        )
        let items: [(Swatch, String)] = [
            (.line(Self.throughputColor, dashed: false), "requests/s"),
            (.line(Self.latencyColor, dashed: false), "p99 latency (log scale)"),
            (.line(Self.expiryColor, dashed: true), labels.expiry),
            (.triangle(Self.tokenCallColor), "token endpoint call"),
        ]
        var x = Self.left
        var y = 64.0
        for (swatch, label) in items {
            let itemWidth = 30 + SVGDocument.textWidth(label, size: 12) + 20
            if x + itemWidth > Self.width - Self.right && x > Self.left {
                x = Self.left
                y += 20
            }
            switch swatch {
            case .line(let color, let dashed):
                document.line(x1: x, y1: y - 4, x2: x + 22, y2: y - 4, color: color, width: 2.5, dashed: dashed)
            case .triangle(let color):
                document.triangle(centerX: x + 11, baseY: y + 1, color: color)
            }
            document.text(label, x: x + 30, y: y, size: 12)
            x += itemWidth
        }
        return y + 22
    }

    private enum Swatch {
        case line(String, dashed: Bool)
        case triangle(String)
    }

    private static func panel(
        _ result: ScenarioResult,
        scales: Scales,
        top: Double,
        event: String,
        into document: inout SVGDocument
    ) {
        let plotWidth = Self.width - Self.left - Self.right
        let throughputTop = top + 24
        let laneTop = throughputTop + Self.throughputHeight
        let latencyTop = laneTop + Self.markLane
        let bottom = latencyTop + Self.latencyHeight
        func x(_ seconds: Double) -> Double { Self.left + min(seconds / scales.duration, 1) * plotWidth }
        func yThroughput(_ value: Double) -> Double {
            throughputTop + Self.throughputHeight * (1 - scales.throughput.fraction(value))
        }
        func yLatency(_ value: Double) -> Double {
            latencyTop + Self.latencyHeight * (1 - scales.latency.fraction(value))
        }

        document.titledText(result.name, Self.figures(result, event: event), x: Self.left, y: top + 14)
        // Grid and axes: round ticks.
        for tick in scales.timeTicks {
            document.line(x1: x(tick), y1: throughputTop, x2: x(tick), y2: bottom, color: "#eee", width: 1)
            document.text(trimmed(tick) + " s", x: x(tick), y: bottom + 15, size: 11, anchor: "middle", fill: "#555")
        }
        let ticks = scales.throughput.ticks
        Self.verticalAxis(ticks.map { ($0, yThroughput($0)) }, color: Self.throughputColor, into: &document) { tick in
            compactCount(tick) + (tick == ticks.last ? " req/s" : "")
        }
        Self.verticalAxis(
            scales.latency.ticks.map { ($0, yLatency($0)) },
            color: Self.latencyColor,
            into: &document,
            label: compactMilliseconds
        )
        document.frame(x: Self.left, y: throughputTop, width: plotWidth, height: Self.throughputHeight)
        document.frame(x: Self.left, y: latencyTop, width: plotWidth, height: Self.latencyHeight)

        let window = result.series.count > 1 ? result.series[1].startSeconds - result.series[0].startSeconds : 0.1
        let middle = { (point: TimeSeriesPoint) in x(point.startSeconds + window / 2) }
        document.polyline(
            result.series.map { (middle($0), yThroughput($0.requestsPerSecond)) },
            color: Self.throughputColor,
            width: 2
        )
        // A window where nothing completed has no p99: the line breaks there rather than dive to 0.
        var segment: [(Double, Double)] = []
        for point in result.series {
            if point.requestsPerSecond > 0 && point.p99Milliseconds > 0 {
                segment.append((middle(point), yLatency(point.p99Milliseconds)))
            } else {
                document.polyline(segment, color: Self.latencyColor, width: 1.8)
                segment = []
            }
        }
        document.polyline(segment, color: Self.latencyColor, width: 1.8)

        for expiry in result.expiryTimes where expiry <= scales.duration {
            document.line(
                x1: x(expiry),
                y1: throughputTop,
                x2: x(expiry),
                y2: bottom,
                color: Self.expiryColor,
                width: 1.5,
                dashed: true
            )
        }
        for call in result.refreshTimes where call <= scales.duration {
            document.triangle(
                centerX: x(call),
                baseY: laneTop + Self.markLane - 2,
                color: Self.tokenCallColor,
                title: "token call at \(format(call, 3)) s"
            )
        }
    }

    /// A gridline and a label for each `(value, y)`, the label in the colour of the line it measures.
    private static func verticalAxis(
        _ ticks: [(value: Double, y: Double)],
        color: String,
        into document: inout SVGDocument,
        label: (Double) -> String
    ) {
        for tick in ticks {
            document.line(x1: Self.left, y1: tick.y, x2: Self.width - Self.right, y2: tick.y, color: "#eee", width: 1)
            document.text(label(tick.value), x: Self.left - 6, y: tick.y + 4, size: 11, anchor: "end", fill: color)
        }
    }

    /// `28,331 req/s · p99 6.20 ms · 2 expiry events · 2 token calls · 0 client 401s`.
    static func figures(_ result: ScenarioResult, event: String = "expiry event") -> String {
        var parts = [
            "\(grouped(result.requestsPerSecond)) req/s", "p99 \(format(result.latency.p99Milliseconds, 2)) ms",
        ]
        if result.proxies > 0 {
            parts += [
                plural(result.expiryEvents, event), plural(result.tokenCalls, "token call"),
                plural(result.client401s, "client 401"),
            ]
        }
        return parts.joined(separator: " · ")
    }
}

/// `1 token call`, `2 token calls`.
func plural(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
