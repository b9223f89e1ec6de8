import Foundation

/// One panel per scenario: throughput (blue) and p99 latency (orange) per 100 ms, each expiry event a
/// red line, each token-endpoint call a green tick, so the storm and the recovery show at a glance.
enum SVGChart {
    static func render(_ results: [ScenarioResult]) -> String {
        let width = 900.0
        let panelHeight = 220.0
        let margin = (left: 70.0, right: 70.0, top: 30.0, bottom: 30.0)
        let panels = results.filter { !$0.series.isEmpty }
        let height = Double(max(panels.count, 1)) * panelHeight + 20
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>

            """
        for (index, result) in panels.enumerated() {
            let top = Double(index) * panelHeight + margin.top
            let plotHeight = panelHeight - margin.top - margin.bottom
            let plotWidth = width - margin.left - margin.right
            let duration = max(result.durationSeconds, 0.1)
            let maxRate = max(result.series.map(\.requestsPerSecond).max() ?? 1, 1) * 1.1
            let maxP99 = max(result.series.map(\.p99Milliseconds).max() ?? 1, 0.001) * 1.1
            func x(_ seconds: Double) -> Double { margin.left + seconds / duration * plotWidth }
            func yRate(_ rate: Double) -> Double { top + plotHeight - rate / maxRate * plotHeight }
            func yP99(_ value: Double) -> Double { top + plotHeight - value / maxP99 * plotHeight }
            svg +=
                "<text x=\"\(margin.left)\" y=\"\(top - 10)\" font-weight=\"bold\">\(result.name): \(format(result.requestsPerSecond, 0)) req/s, p99 \(format(result.latency.p99Milliseconds, 2)) ms, \(result.expiryEvents) expiry events, \(result.tokenCalls) token calls, \(result.client401s) client 401s</text>\n"
            svg +=
                "<rect x=\"\(margin.left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(plotHeight)\" fill=\"none\" stroke=\"#999\"/>\n"
            for expiry in result.expiryTimes where expiry <= duration {
                svg +=
                    "<line x1=\"\(x(expiry))\" y1=\"\(top)\" x2=\"\(x(expiry))\" y2=\"\(top + plotHeight)\" stroke=\"#d62728\" stroke-width=\"1\" opacity=\"0.6\"/>\n"
            }
            for refresh in result.refreshTimes where refresh <= duration {
                svg +=
                    "<line x1=\"\(x(refresh))\" y1=\"\(top + plotHeight - 8)\" x2=\"\(x(refresh))\" y2=\"\(top + plotHeight)\" stroke=\"#2ca02c\" stroke-width=\"2\"/>\n"
            }
            let ratePoints = result.series.map {
                "\(format(x($0.startSeconds + 0.05), 1)),\(format(yRate($0.requestsPerSecond), 1))"
            }
            let p99Points = result.series.map {
                "\(format(x($0.startSeconds + 0.05), 1)),\(format(yP99($0.p99Milliseconds), 1))"
            }
            svg +=
                "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"\(ratePoints.joined(separator: " "))\"/>\n"
            svg +=
                "<polyline fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1.5\" points=\"\(p99Points.joined(separator: " "))\"/>\n"
            svg +=
                "<text x=\"\(margin.left - 5)\" y=\"\(top + 10)\" text-anchor=\"end\" fill=\"#1f77b4\">\(format(maxRate, 0))</text>\n"
            svg +=
                "<text x=\"\(margin.left - 5)\" y=\"\(top + plotHeight)\" text-anchor=\"end\" fill=\"#1f77b4\">0 req/s</text>\n"
            svg +=
                "<text x=\"\(margin.left + plotWidth + 5)\" y=\"\(top + 10)\" fill=\"#ff7f0e\">\(format(maxP99, 1)) ms</text>\n"
            svg +=
                "<text x=\"\(margin.left + plotWidth + 5)\" y=\"\(top + plotHeight)\" fill=\"#ff7f0e\">0 p99</text>\n"
            svg +=
                "<text x=\"\(margin.left + plotWidth)\" y=\"\(top + plotHeight + 15)\" text-anchor=\"end\">\(format(duration, 1)) s</text>\n"
        }
        svg +=
            "<text x=\"70\" y=\"\(Int(height) - 5)\" fill=\"#555\">each panel: the round with the median throughput · blue: requests/s per 100 ms · orange: p99 per 100 ms · red: expiry event (all tokens revoked) · green: token endpoint call</text>\n"
        svg += "</svg>\n"
        return svg
    }
}
