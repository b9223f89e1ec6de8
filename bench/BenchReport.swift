import Foundation

/// The readable table and the JSON document.
enum BenchReport {
    static func table(_ results: [ScenarioResult], ratios: BenchRatios, idle: IdleResult?) -> String {
        var lines: [String] = []
        let header = [
            "scenario", "conns", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "errors", "401s",
            "token calls", "expiries", "refr/expiry", "replays", "max seen", "RSS MiB", "CPU s",
        ]
        var rows: [[String]] = [header]
        for result in results {
            rows.append([
                result.name, "\(result.connections)", format(result.requestsPerSecond, 0),
                format(result.latency.p50Milliseconds, 2), format(result.latency.p99Milliseconds, 2),
                format(result.latency.p999Milliseconds, 2), format(result.latency.maxMilliseconds, 1),
                "\(result.errorCount)", "\(result.client401s)", "\(result.tokenCalls)", "\(result.expiryEvents)",
                result.refreshesPerExpiry.map { format($0, 2) } ?? "-", "\(result.replays)",
                "\(result.maxTimesSeenUpstream)",
                result.proxyPeakRSSMiB.map { format($0, 1) } ?? "-",
                result.proxyCPUSeconds.map { format($0, 2) } ?? "-",
            ])
        }
        let widths = (0..<header.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for (index, row) in rows.enumerated() {
            let cells = row.enumerated().map { column, cell in
                column == 0
                    ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }
            lines.append(cells.joined(separator: "  "))
            if index == 0 { lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
        for result in results where result.errorCount > 0 {
            let kinds = result.errors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(
                separator: ", "
            )
            lines.append("\(result.name) errors: \(kinds)")
        }
        lines.append("")
        if let value = ratios.steadyOverDirect { lines.append("steady / direct throughput:  \(format(value, 3))") }
        if let value = ratios.steadyOverTarget { lines.append("steady / target throughput:  \(format(value, 3))") }
        if let value = ratios.expiryOverSteady { lines.append("expiry / steady throughput:  \(format(value, 3))") }
        if let value = ratios.expiryP99OverSteadyP99 {
            lines.append("expiry p99 / steady p99:     \(format(value, 3))")
        }
        if let idle {
            lines.append(
                "idle: \(idle.established) of \(idle.connections) keep-alive connections held; proxy RSS \(format(idle.proxyRSSMiB, 1)) MiB"
                    + " (\(format(idle.proxyRSSBeforeMiB, 1)) MiB before)"
                    + (idle.stopReason.map { "; stopped early: \($0)" } ?? "")
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func json(_ results: [ScenarioResult], ratios: BenchRatios, idle: IdleResult?) -> Data {
        var document: [String: Any] = [
            "scenarios": results.map { result -> [String: Any] in
                var object: [String: Any] = [
                    "name": result.name,
                    "connections": result.connections,
                    "duration_s": result.durationSeconds,
                    "requests": result.requests,
                    "requests_per_second": result.requestsPerSecond,
                    "latency_ms": [
                        "p50": result.latency.p50Milliseconds, "p99": result.latency.p99Milliseconds,
                        "p999": result.latency.p999Milliseconds, "max": result.latency.maxMilliseconds,
                    ],
                    "errors": result.errorCount,
                    "errors_by_kind": result.errors,
                    "statuses": Dictionary(uniqueKeysWithValues: result.statuses.map { ("\($0.key)", $0.value) }),
                    "client_401s": result.client401s,
                    "token_calls": result.tokenCalls,
                    "expiry_events": result.expiryEvents,
                    "replays": result.replays,
                    "max_times_seen_upstream": result.maxTimesSeenUpstream,
                    "series": result.series.map {
                        ["t": $0.startSeconds, "rps": $0.requestsPerSecond, "p99_ms": $0.p99Milliseconds]
                    },
                    "expiry_times_s": result.expiryTimes,
                    "refresh_times_s": result.refreshTimes,
                ]
                object["refreshes_per_expiry"] = jsonNumber(result.refreshesPerExpiry)
                object["proxy_peak_rss_mib"] = jsonNumber(result.proxyPeakRSSMiB)
                object["proxy_cpu_s"] = jsonNumber(result.proxyCPUSeconds)
                return object
            },
            "ratios": [
                "steady_over_direct": jsonNumber(ratios.steadyOverDirect),
                "expiry_over_steady": jsonNumber(ratios.expiryOverSteady),
                "expiry_p99_over_steady_p99": jsonNumber(ratios.expiryP99OverSteadyP99),
                "steady_over_target": jsonNumber(ratios.steadyOverTarget),
            ] as [String: Any],
        ]
        if let idle {
            document["idle"] = [
                "connections": idle.connections, "established": idle.established,
                "proxy_rss_mib": idle.proxyRSSMiB, "proxy_rss_before_mib": idle.proxyRSSBeforeMiB,
            ]
        }
        return (try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }
}

func format(_ value: Double, _ decimals: Int) -> String {
    String(format: "%.\(decimals)f", value)
}

/// A number, or JSON null.
func jsonNumber(_ value: Double?) -> Any {
    value.map { $0 as Any } ?? NSNull()
}
