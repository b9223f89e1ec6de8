import Foundation
import Testing

@testable import bearer_bench

/// The `--svg` chart, read by a person: round axis ticks with units, a legend that fits, time ticks,
/// marks one can see, and a JSON without float noise.
@Suite struct ChartTests {
    /// An expiry storm: 3 s of 100 ms windows, every token revoked at 1 s and 2 s, one token call just
    /// after each, no request completing from 1.3 s to 1.7 s (the latency line must break there).
    static let storm: ScenarioResult = {
        var samples: [Sample] = []
        for window in 0..<30 where !(13..<18).contains(window) {
            let latency: UInt32 = window == 18 ? 528_000 : (window == 12 ? 70_000 : 1_200)
            for index in 0..<(window == 29 ? 7_695 : 5_000) {
                samples.append(
                    Sample(
                        completedAtMicroseconds: UInt32(window * 100_000 + index % 100_000),
                        latencyMicroseconds: latency
                    )
                )
            }
        }
        return ScenarioResult(
            name: "expiry",
            proxies: 1,
            connections: 32,
            durationSeconds: 3.001976268,
            requests: 84_993,
            requestsPerSecond: 28_331.094480860294,
            latency: LatencyStatistics(microseconds: [6_200]),
            errors: [:],
            statuses: [:],
            client401s: 0,
            tokenCalls: 2,
            expiryEvents: 2,
            replays: 64,
            maxTimesSeenUpstream: 2,
            proxyPeakRSSMiB: 29.5625,
            proxyCPUSeconds: 1.1900000000000002,
            series: timeSeries(samples, window: 0.1, duration: 3.001976268),
            expiryTimes: [1.001031707, 2.001280792],
            refreshTimes: [1.007945098, 2.002312561]
        )
    }()

    static var svg: String { SVGChart.render([Self.storm]) }

    /// `(x, anchor, size, text)` of every `<text>` (tspans joined).
    static func texts(_ svg: String) -> [(x: Double, anchor: String, size: Double, text: String)] {
        svg.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("<text ") else { return nil }
            func attribute(_ name: String) -> String? {
                guard let start = line.range(of: " \(name)=\"") else { return nil }
                return String(line[start.upperBound...].prefix { $0 != "\"" })
            }
            let content = line.replacingOccurrences(of: "<[^>]*>", with: "", options: .regularExpression)
            return (
                Double(attribute("x") ?? "") ?? 0, attribute("text-anchor") ?? "start",
                Double(attribute("font-size") ?? "") ?? 13, content
            )
        }
    }

    @Test func axesHaveRoundTicks() {
        #expect(ChartAxis.linear(upTo: 76_950).ticks == [0, 20_000, 40_000, 60_000, 80_000])
        #expect(ChartAxis.linear(upTo: 84_645).ticks == [0, 25_000, 50_000, 75_000, 100_000])
        #expect(ChartAxis.linear(upTo: 3).ticks == [0, 1, 2, 3])
        #expect(ChartAxis.logarithmic(from: 0.6, to: 528).ticks == [0.1, 1, 10, 100, 1000])
        #expect([0, 2_500, 25_000, 1_200_000].map(compactCount) == ["0", "2.5k", "25k", "1.2M"])
        #expect([0.1, 1, 1000].map(compactMilliseconds) == ["0.1 ms", "1 ms", "1000 ms"])
    }

    @Test func everyLabelIsRoundAndFitsTheWidth() {
        let texts = Self.texts(Self.svg)
        for text in texts {
            let width = SVGDocument.textWidth(text.text, size: text.size)
            let (from, to) =
                switch text.anchor {
                case "end": (text.x - width, text.x)
                case "middle": (text.x - width / 2, text.x + width / 2)
                default: (text.x, text.x + width)
                }
            #expect(from >= 0 && to <= SVGChart.width, "'\(text.text)' runs off the picture (\(from)–\(to))")
        }
        let labels = texts.map(\.text)
        // The legend, whole.
        for entry in ["requests/s", "p99 latency (log scale)", "expiry: every token revoked", "token endpoint call"] {
            #expect(labels.contains(entry), "the legend lacks '\(entry)'")
        }
        // Round ticks with units, not the data's maximum (84645) or "0 p99"; a tick every second.
        for tick in [
            "0", "20k", "40k", "60k", "80k req/s", "1 ms", "10 ms", "100 ms", "1000 ms", "0 s", "1 s", "2 s", "3 s",
        ] {
            #expect(labels.contains(tick), "no tick '\(tick)'")
        }
        #expect(!labels.contains { $0.contains("p99") && $0.hasPrefix("0 ") })
        #expect(!labels.contains { $0.allSatisfy(\.isNumber) && $0.count >= 5 }, "a raw number as a label")
        // The panel's title: its name in bold, then its figures, grouped and rounded.
        #expect(
            labels.contains("expiry" + "28,331 req/s · p99 6.20 ms · 2 expiry events · 2 token calls · 0 client 401s")
        )
    }

    @Test func expiriesAndTokenCallsAreMarksOneCanSee() {
        let lines = Self.svg.split(separator: "\n")
        let expiries = lines.filter { $0.contains("stroke=\"\(SVGChart.expiryColor)\"") && $0.hasPrefix("<line") }
        #expect(expiries.count == 2 + 1, "two expiry lines and the legend's swatch")
        #expect(expiries.allSatisfy { $0.contains("stroke-dasharray") })
        let calls = lines.filter { $0.hasPrefix("<polygon") && $0.contains("<title>token call at") }
        #expect(calls.count == 2)
        for call in calls {
            let points = call.split(separator: "\"")[1].split(separator: " ").map { $0.split(separator: ",") }
            let xs = points.map { Double($0[0])! }
            let ys = points.map { Double($0[1])! }
            #expect(xs.max()! - xs.min()! >= 10 && ys.max()! - ys.min()! >= 10, "a token call is a hair-thin mark")
        }
        // No request completed from 1.3 s to 1.7 s: the p99 line breaks there instead of diving to 0.
        let latencyLines = lines.filter { $0.hasPrefix("<polyline") && $0.contains(SVGChart.latencyColor) }
        #expect(latencyLines.count == 2)
    }

    /// Figures keep the precision they were measured with: no `0.30000000000000004`.
    @Test func theJSONCarriesNoFloatNoise() throws {
        let summaries = ScenarioSummary.group([
            [Self.storm, ReportTests.result("steady", rps: 32_679.3333333, p99: 5980)]
        ])
        let data = BenchReport.json(
            summaries,
            ratios: RatioSummary.compute(
                [[Self.storm, ReportTests.result("steady", rps: 32_679.3333333, p99: 5980)]],
                comparison: nil
            ),
            idle: nil,
            settings: ReportTests.settings
        )
        let text = String(decoding: data, as: UTF8.self)
        let noisy = text.range(of: #"[0-9]\.[0-9]{4,}"#, options: .regularExpression).map { text[$0] }
        #expect(noisy == nil, "a figure with float noise: \(noisy ?? "")")
        #expect(text.contains("\"t\" : 0.3,") || text.contains("\"t\" : 0.3\n"))
        #expect(text.contains("\"requests_per_second\" : 28331.1"))
        #expect(text.contains("\"expiry_over_steady\" : 0.867"))
        #expect(text.contains("\"expiry_times_s\" : [\n            1.001,\n            2.001\n"))
    }
}
