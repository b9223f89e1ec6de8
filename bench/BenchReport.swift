import Foundation

/// The readable report and the JSON document. The column names here are the ones docs/benchmarks.md uses.
enum BenchReport {
    struct Settings {
        var connections: Int
        var durationSeconds: Double
        var warmupSeconds: Double
        var rounds: Int
        /// `--rate`: requests per second over all connections.
        var rate: Double? = nil
    }

    /// The column names, in docs/benchmarks.md and output alike.
    static let speedColumns = [
        "scenario", "req/s", "±%", "p50 ms", "p99 ms", "±%", "p99.9 ms", "errors", "proxy RSS MiB", "proxy CPU s",
    ]
    static let tokenColumns = [
        "scenario", "proxies", "client 401s", "token calls", "expiry events", "refreshes/expiry", "replays",
        "max seen upstream",
    ]
    static let sessionColumns = [
        "session", "requests", "client 401s", "token calls", "expiry events", "refreshes/expiry",
    ]

    static func table(
        _ summaries: [ScenarioSummary],
        ratios: [RatioSummary],
        idle: IdleResult?,
        settings: Settings
    ) -> String {
        var lines = [
            "\(settings.connections) connections; each scenario measured \(formatSeconds(settings.durationSeconds)) after "
                + "\(formatSeconds(settings.warmupSeconds)) warm-up, \(settings.rounds) round\(settings.rounds == 1 ? "" : "s"); "
                + "figures are medians over the rounds, ±% is half their range"
                + (settings.rate.map { "; load paced at \(grouped($0)) req/s" } ?? ""),
            "",
        ]
        var speed = [Self.speedColumns]
        for summary in summaries {
            speed.append([
                summary.name, grouped(summary.requestsPerSecond.median),
                percent(summary.requestsPerSecond, rounds: summary.rounds.count),
                format(summary.p50Milliseconds, 2), format(summary.p99Milliseconds.median, 2),
                percent(summary.p99Milliseconds, rounds: summary.rounds.count), format(summary.p999Milliseconds, 2),
                "\(summary.errorCount)",
                summary.proxyPeakRSSMiB.map { format($0, 1) } ?? "-",
                summary.proxyCPUSeconds.map { format($0, 2) } ?? "-",
            ])
        }
        lines += columns(speed)
        let proxied = summaries.filter(\.isThroughProxy)
        if !proxied.isEmpty {
            var tokens = [Self.tokenColumns]
            for summary in proxied {
                tokens.append([
                    summary.name, "\(summary.proxies)", "\(summary.client401s)", "\(summary.tokenCalls)",
                    "\(summary.expiryEvents)",
                    summary.refreshesPerExpiry.map { format($0, 2) } ?? "-", "\(summary.replays)",
                    "\(summary.maxTimesSeenUpstream)",
                ])
            }
            lines.append("")
            lines += columns(tokens)
        }
        for summary in summaries where !summary.sessions.isEmpty {
            lines +=
                ["", "\(summary.name) by session:"]
                + columns([Self.sessionColumns] + summary.sessions.map(Self.sessionRow))
        }
        for summary in summaries where summary.errorCount > 0 {
            let kinds = summary.errors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            lines.append("\(summary.name) errors: \(kinds.joined(separator: ", "))")
        }
        lines.append("")
        lines += Self.ratioLines(ratios, rounds: settings.rounds)
        lines += Self.perCoreLines(summaries)
        lines += DPoPComparison.compute(summaries)?.lines ?? []
        if let idle {
            lines.append(
                "idle: \(idle.established) of \(idle.connections) keep-alive connections held; proxy RSS \(format(idle.proxyRSSMiB, 1)) MiB"
                    + " (\(format(idle.proxyRSSBeforeMiB, 1)) MiB before)"
                    + (idle.stopReason.map { "; stopped early: \($0)" } ?? "")
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func sessionRow(_ session: SessionResult) -> [String] {
        [
            session.name, "\(session.requests)", "\(session.client401s)", "\(session.tokenCalls)",
            "\(session.expiryEvents)", session.refreshesPerExpiry.map { format($0, 2) } ?? "-",
        ]
    }

    /// One line per ratio with its spread and the rounds' range, and a warning where the rounds fall
    /// on both sides of 1 or the spread is larger than the ratio's distance from 1: no verdict that a
    /// noisy machine could flip.
    static func ratioLines(_ ratios: [RatioSummary], rounds: Int) -> [String] {
        guard !ratios.isEmpty else { return [] }
        let width = ratios.map(\.label.count).max() ?? 0
        var lines: [String] = []
        for ratio in ratios {
            var line =
                ratio.label.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                + format(ratio.spread.median, 2)
            if rounds > 1 {
                line +=
                    " ± \(format(ratio.halfRange, 2))  (rounds \(format(ratio.spread.minimum, 2))–\(format(ratio.spread.maximum, 2)))"
                if ratio.roundsDisagree {
                    line += "  noisy: the rounds fall on both sides of 1: no conclusion"
                } else if ratio.isInconclusive {
                    line +=
                        "  noisy: ± \(format(ratio.halfRange, 2)) is more than the distance from 1"
                        + " (\(format(abs(ratio.spread.median - 1), 2))): no conclusion"
                }
            }
            lines.append(line)
        }
        if rounds == 1 {
            lines.append("one round: how noisy this machine is was not measured; compare with --repeat 3 or more")
        }
        return lines
    }

    /// With the https scenarios: what one core of the proxy does (requests, or for new-tunnels
    /// tunnels, per second of its CPU), the goal the per-core comparisons are made on.
    ///
    /// Then the proxy's CPU per request of steady-tls and intercept, and their difference: what
    /// terminating the client's TLS costs a request (both have TLS towards the API).
    static func perCoreLines(_ summaries: [ScenarioSummary]) -> [String] {
        let tlsNames: Set = ["steady-tls", "intercept", "new-tunnels", "resumed-tunnels"]
        let figures = summaries.filter { tlsNames.contains($0.name) }.compactMap { summary in
            summary.requestsPerProxyCore.map { "\(summary.name) \(grouped($0.median))" }
        }
        guard !figures.isEmpty else { return [] }
        var lines = ["per proxy core (requests, or tunnels, per second of its CPU): " + figures.joined(separator: ", ")]
        func microseconds(_ name: String) -> Double? {
            guard let perCore = summaries.first(where: { $0.name == name })?.requestsPerProxyCore?.median, perCore > 0
            else { return nil }
            return 1_000_000 / perCore
        }
        if let base = microseconds("steady-tls"), let intercepted = microseconds("intercept") {
            lines.append(
                "proxy CPU per request: steady-tls \(format(base, 1)) µs, intercept \(format(intercepted, 1)) µs;"
                    + " the client's TLS layer \(format(intercepted - base, 1)) µs a request"
            )
        }
        return lines
    }

    /// Every figure, rounded to what it was measured with (`Precision`), so that no value carries float
    /// noise such as `0.30000000000000004`.
    static func json(
        _ summaries: [ScenarioSummary],
        ratios: [RatioSummary],
        idle: IdleResult?,
        settings: Settings
    ) -> Data {
        var document: [String: Any] = [
            "settings": [
                "connections": settings.connections, "duration_s": settings.durationSeconds,
                "warmup_s": settings.warmupSeconds, "rounds": settings.rounds,
            ],
            "scenarios": summaries.map { summary -> [String: Any] in
                var object: [String: Any] = [
                    "name": summary.name,
                    "proxies": summary.proxies,
                    "connections": summary.connections,
                    "requests": summary.requests,
                    "requests_per_second": Precision.rate(summary.requestsPerSecond.median),
                    "requests_per_second_range": [
                        summary.requestsPerSecond.minimum, summary.requestsPerSecond.maximum,
                    ].map(Precision.rate),
                    "latency_ms": [
                        "p50": summary.p50Milliseconds, "p99": summary.p99Milliseconds.median,
                        "p999": summary.p999Milliseconds, "max": summary.maxMilliseconds,
                    ].mapValues(Precision.milliseconds),
                    "p99_ms_range": [summary.p99Milliseconds.minimum, summary.p99Milliseconds.maximum]
                        .map(Precision.milliseconds),
                    "errors": summary.errorCount,
                    "errors_by_kind": summary.errors,
                    "client_401s": summary.client401s,
                    "token_calls": summary.tokenCalls,
                    "expiry_events": summary.expiryEvents,
                    "replays": summary.replays,
                    "max_times_seen_upstream": summary.maxTimesSeenUpstream,
                    "rounds": summary.rounds.map(Self.roundObject),
                ]
                if !summary.sessions.isEmpty { object["sessions"] = summary.sessions.map(Self.sessionObject) }
                object["refreshes_per_expiry"] = jsonNumber(summary.refreshesPerExpiry.map(Precision.ratio))
                object["proxy_peak_rss_mib"] = jsonNumber(summary.proxyPeakRSSMiB.map(Precision.mebibytes))
                object["proxy_cpu_s"] = jsonNumber(summary.proxyCPUSeconds.map(Precision.cpuSeconds))
                object["requests_per_proxy_cpu_second"] = jsonNumber(
                    summary.requestsPerProxyCore.map { Precision.rate($0.median) }
                )
                return object
            },
            "ratios": Dictionary(uniqueKeysWithValues: ratios.map { ($0.key, Precision.ratio($0.spread.median)) }),
            "ratio_ranges": Dictionary(
                uniqueKeysWithValues: ratios.map {
                    ($0.key, [$0.spread.minimum, $0.spread.maximum].map(Precision.ratio))
                }
            ),
        ]
        if let rate = settings.rate, var recorded = document["settings"] as? [String: Any] {
            recorded["rate"] = rate
            document["settings"] = recorded
        }
        if let dpop = DPoPComparison.compute(summaries) { document["dpop"] = dpop.json }
        if let idle {
            document["idle"] = [
                "connections": idle.connections, "established": idle.established,
                "proxy_rss_mib": Precision.mebibytes(idle.proxyRSSMiB),
                "proxy_rss_before_mib": Precision.mebibytes(idle.proxyRSSBeforeMiB),
            ]
        }
        return (try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }

    /// One session's figures (`--sessions`), named as the scenario's.
    private static func sessionObject(_ session: SessionResult) -> [String: Any] {
        var object: [String: Any] = [
            "name": session.name, "requests": session.requests, "client_401s": session.client401s,
            "token_calls": session.tokenCalls, "expiry_events": session.expiryEvents,
        ]
        object["refreshes_per_expiry"] = jsonNumber(session.refreshesPerExpiry.map(Precision.ratio))
        return object
    }

    /// Every figure of one round, as measured.
    private static func roundObject(_ result: ScenarioResult) -> [String: Any] {
        var object: [String: Any] = [
            "proxies": result.proxies,
            "duration_s": Precision.seconds(result.durationSeconds),
            "requests": result.requests,
            "requests_per_second": Precision.rate(result.requestsPerSecond),
            "latency_ms": [
                "p50": result.latency.p50Milliseconds, "p99": result.latency.p99Milliseconds,
                "p999": result.latency.p999Milliseconds, "max": result.latency.maxMilliseconds,
            ].mapValues(Precision.milliseconds),
            "errors_by_kind": result.errors,
            "statuses": Dictionary(uniqueKeysWithValues: result.statuses.map { ("\($0.key)", $0.value) }),
            "client_401s": result.client401s,
            "token_calls": result.tokenCalls,
            "expiry_events": result.expiryEvents,
            "replays": result.replays,
            "max_times_seen_upstream": result.maxTimesSeenUpstream,
            "series": result.series.map {
                [
                    "t": Precision.seconds($0.startSeconds), "rps": Precision.rate($0.requestsPerSecond),
                    "p99_ms": Precision.milliseconds($0.p99Milliseconds),
                ]
            },
            "expiry_times_s": result.expiryTimes.map(Precision.seconds),
            "refresh_times_s": result.refreshTimes.map(Precision.seconds),
        ]
        object["proxy_peak_rss_mib"] = jsonNumber(result.proxyPeakRSSMiB.map(Precision.mebibytes))
        object["proxy_cpu_s"] = jsonNumber(result.proxyCPUSeconds.map(Precision.cpuSeconds))
        if !result.sessions.isEmpty { object["sessions"] = result.sessions.map(Self.sessionObject) }
        return object
    }

    /// Rows as aligned columns: the first left-aligned, the others right-aligned, a rule under the header.
    static func columns(_ rows: [[String]]) -> [String] {
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines: [String] = []
        for (index, row) in rows.enumerated() {
            let cells = row.enumerated().map { column, cell in
                column == 0
                    ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }
            lines.append(cells.joined(separator: "  "))
            if index == 0 { lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
        return lines
    }
}

func format(_ value: Double, _ decimals: Int) -> String {
    String(format: "%.\(decimals)f", value)
}

/// `85,407`.
func grouped(_ value: Double) -> String {
    let digits = String(Int(value.rounded()))
    var result = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
        result.append(digit)
    }
    return result
}

/// `3.1%`: half a spread's range relative to its median (`-` when only one round ran).
func percent(_ spread: Spread, rounds: Int) -> String {
    rounds > 1 ? format(spread.relativeHalfRange * 100, 1) + "%" : "-"
}

/// How finely the JSON gives each kind of figure: what was measured, not what division left over.
enum Precision {
    /// Requests per second: a tenth.
    static func rate(_ value: Double) -> Double { rounded(value, 1) }
    /// Latencies are measured in whole microseconds.
    static func milliseconds(_ value: Double) -> Double { rounded(value, 3) }
    /// Instants and durations: a millisecond.
    static func seconds(_ value: Double) -> Double { rounded(value, 3) }
    /// Ratios: three decimals, finer than any round-to-round spread.
    static func ratio(_ value: Double) -> Double { rounded(value, 3) }
    static func mebibytes(_ value: Double) -> Double { rounded(value, 1) }
    /// /proc counts CPU time in clock ticks of 10 ms.
    static func cpuSeconds(_ value: Double) -> Double { rounded(value, 2) }

    static func rounded(_ value: Double, _ decimals: Int) -> Double {
        let scale = pow(10, Double(decimals))
        return (value * scale).rounded() / scale
    }
}

/// A number, or JSON null.
func jsonNumber(_ value: Double?) -> Any {
    value.map { $0 as Any } ?? NSNull()
}
