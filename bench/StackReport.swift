import Foundation

/// The report of a run against your own stack: the steady phase and the storm phase side by side
/// (throughput, p50/p99/p99.9, errors by kind), each storm (the token endpoint's latency, the
/// requests that parked behind it and how long they waited), the natural refreshes, and token calls
/// against storms. Text, JSON (every figure, with the series per 100 ms) and the chart.
struct StackReport {
    let outcome: StackRun.Outcome
    let settings: BenchOptions

    /// One storm's figures, with the requests sent while its refresh ran (they parked behind it).
    struct StormFigures {
        var storm: StormDriver.Storm
        var parked: Int
        var waits: LatencyStatistics
    }

    /// One phase's figures.
    struct PhaseFigures {
        var phase: StackRun.Phase
        var requests: Int
        var requestsPerSecond: Double
        var latency: LatencyStatistics
        var series: [TimeSeriesPoint]
        var storms: [StormFigures]
        /// Every parked request's wait, over all storms.
        var parkedWaits: LatencyStatistics
        /// Answers that were not 2xx, by status.
        var upstreamStatuses: [Int: Int]
        /// Refreshes that failed: the storms' and the natural ones', by error.
        var refreshFailures: [String: Int]
    }

    let phases: [PhaseFigures]

    init(_ outcome: StackRun.Outcome, settings: BenchOptions) {
        self.outcome = outcome
        self.settings = settings
        self.phases = outcome.phases.map(Self.figures)
    }

    private static func figures(_ phase: StackRun.Phase) -> PhaseFigures {
        let samples = phase.load.samples
        let requests = phase.load.statuses.values.reduce(0, +)
        let seconds = max(phase.load.measuredSeconds, 0.001)
        var allWaits: [UInt32] = []
        let storms = phase.storms.map { storm -> StormFigures in
            let from = UInt64(max(storm.start, 0) * 1_000_000)
            let to = UInt64(max(storm.end, 0) * 1_000_000)
            let waits = samples.compactMap { sample -> UInt32? in
                let sent =
                    UInt64(sample.completedAtMicroseconds)
                    - UInt64(min(sample.latencyMicroseconds, sample.completedAtMicroseconds))
                return sent >= from && sent <= to ? sample.latencyMicroseconds : nil
            }
            allWaits += waits
            return StormFigures(storm: storm, parked: waits.count, waits: LatencyStatistics(microseconds: waits))
        }
        var failures: [String: Int] = [:]
        for storm in phase.storms where storm.outcome != "ok" { failures[storm.outcome, default: 0] += 1 }
        for natural in phase.naturals where natural.refresh.outcome != "ok" {
            failures[natural.refresh.outcome, default: 0] += 1
        }
        return PhaseFigures(
            phase: phase,
            requests: requests,
            requestsPerSecond: Double(requests) / seconds,
            latency: LatencyStatistics(microseconds: samples.map(\.latencyMicroseconds)),
            series: timeSeries(samples, window: 0.1, duration: phase.load.measuredSeconds),
            storms: storms,
            parkedWaits: LatencyStatistics(microseconds: allWaits),
            upstreamStatuses: phase.load.statuses.filter { !(200..<300).contains($0.key) },
            refreshFailures: failures
        )
    }

    /// The storm phase (nil: interrupted before it).
    var stormPhase: PhaseFigures? { self.phases.first { $0.phase.name == "storms" } }

    /// Token calls against storms: one each, or why not.
    var tokenCallsNote: String {
        guard let phase = self.stormPhase else { return "no storm phase ran (interrupted)" }
        let storms = phase.phase.storms.count
        guard let calls = phase.phase.refreshesEnded else {
            return "the proxy's /metrics could not be read after the phase, so its token calls are unknown"
        }
        if storms == 0 {
            return
                "no storm fell in the phase (a storm every \(formatSeconds(self.settings.refreshEvery)), none in its last half second)"
        }
        if calls == storms && phase.phase.naturals.isEmpty { return "one token call per storm" }
        var reasons: [String] = []
        let joined = phase.phase.storms.filter(\.joined).count
        if joined > 0 { reasons.append("\(plural(joined, "storm")) joined a refresh the proxy had started itself") }
        let naturals = phase.phase.naturals.count
        if naturals > 0 {
            reasons.append(naturals == 1 ? "1 natural refresh ran too" : "\(naturals) natural refreshes ran too")
        }
        let unanswered = phase.phase.storms.filter { $0.outcome.hasPrefix("admin:") }.count
        if unanswered > 0 { reasons.append("\(plural(unanswered, "storm")) got no answer from the admin") }
        if reasons.isEmpty {
            reasons.append(
                "a refresh that another ended (a token adopted from the session store, a logout) is not a call"
            )
        }
        return "\(plural(calls, "token call")) for \(plural(storms, "storm")): " + reasons.joined(separator: "; ")
    }

    // MARK: Text

    var text: String {
        var lines: [String] = []
        let target = self.outcome.target
        lines.append(
            "bearer-bench: session \(target.session), \(self.settings.method) \(target.path) through \(self.outcome.proxy) to \(target.upstream)"
        )
        let rate = self.outcome.rate.map { "\(Int($0)) req/s offered" } ?? "closed loop"
        lines.append(
            "\(self.settings.connections) connections, \(rate), \(formatSeconds(self.settings.duration)) a phase, a storm every \(formatSeconds(self.settings.refreshEvery)); token endpoint \(target.tokenEndpoint)"
        )
        if self.outcome.interrupted {
            lines.append("interrupted (Ctrl-C): the figures cover the time measured until then")
        }
        lines.append("")
        func row(_ label: String, _ value: (PhaseFigures) -> String) -> [String] { [label] + self.phases.map(value) }
        lines += BenchReport.columns([
            [""] + self.phases.map(\.phase.name),
            row("requests") { "\($0.requests)" },
            row("requests/s") { grouped($0.requestsPerSecond) },
            row("p50 ms") { format($0.latency.p50Milliseconds, 2) },
            row("p99 ms") { format($0.latency.p99Milliseconds, 2) },
            row("p99.9 ms") { format($0.latency.p999Milliseconds, 2) },
            row("max ms") { format($0.latency.maxMilliseconds, 2) },
            row("non-2xx answers") { "\($0.upstreamStatuses.values.reduce(0, +))" },
            row("connection errors") { "\($0.phase.load.errors.values.reduce(0, +))" },
            row("storms") { "\($0.phase.storms.count)" },
            row("token calls") { $0.phase.refreshesEnded.map(String.init) ?? "?" },
            row("natural refreshes") { "\($0.phase.naturals.count)" },
            row("parked requests") { "\($0.storms.map(\.parked).reduce(0, +))" },
        ])
        lines.append("")
        lines.append("token calls against storms: \(self.tokenCallsNote)")
        if let phase = self.stormPhase, !phase.storms.isEmpty {
            lines.append("")
            lines.append("storms (POST /refresh?park=1):")
            var rows = [["#", "at s", "refresh ms", "outcome", "parked", "waited p50 ms", "waited max ms"]]
            for (index, figures) in phase.storms.enumerated() {
                let storm = figures.storm
                rows.append([
                    "\(index + 1)", format(storm.start, 2), storm.refresh?.seconds.map { format($0 * 1000, 1) } ?? "?",
                    storm.joined ? "\(storm.outcome) (joined)" : storm.outcome, "\(figures.parked)",
                    format(figures.waits.p50Milliseconds, 1), format(figures.waits.maxMilliseconds, 1),
                ])
            }
            lines += BenchReport.columns(rows).map { "  " + $0 }
            let durations = phase.storms.compactMap(\.storm.refresh?.seconds)
            if !durations.isEmpty {
                let sorted = durations.sorted()
                lines.append(
                    "  token endpoint under load: median \(format(sorted[sorted.count / 2] * 1000, 1)) ms, max \(format(sorted[sorted.count - 1] * 1000, 1)) ms; parked requests waited p50 \(format(phase.parkedWaits.p50Milliseconds, 1)) ms, max \(format(phase.parkedWaits.maxMilliseconds, 1)) ms"
                )
            }
        }
        let naturals = self.phases.flatMap { phase in phase.phase.naturals.map { (phase.phase.name, $0) } }
        lines.append("")
        if naturals.isEmpty {
            lines.append("natural refreshes: none")
        } else {
            lines.append("natural refreshes (the proxy's own):")
            for (name, natural) in naturals {
                let refresh = natural.refresh.seconds.map { format($0 * 1000, 1) + " ms" } ?? "?"
                lines.append(
                    "  \(name) \(format(natural.seenAt, 2)) s: trigger \(natural.refresh.trigger ?? "unknown"), \(natural.refresh.outcome), \(refresh), \(natural.refresh.waitingRequests ?? 0) waiting"
                )
            }
        }
        var errors: [String] = []
        for phase in self.phases {
            for (status, count) in phase.upstreamStatuses.sorted(by: { $0.key < $1.key }) {
                errors.append("\(phase.phase.name): \(count) × status \(status)")
            }
            for (kind, count) in phase.refreshFailures.sorted(by: { $0.key < $1.key }) {
                errors.append("\(phase.phase.name): \(count) × refresh failed: \(kind)")
            }
            for (kind, count) in phase.phase.load.errors.sorted(by: { $0.key < $1.key }) {
                errors.append("\(phase.phase.name): \(count) × \(kind)")
            }
        }
        lines.append("errors: " + (errors.isEmpty ? "none" : ""))
        lines += errors.map { "  " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: JSON

    var json: Data {
        let target = self.outcome.target
        var document: [String: Any] = [
            "mode": "stack",
            "settings": [
                "session": target.session, "upstream": target.upstream, "path": target.path,
                "method": self.settings.method, "proxy": self.outcome.proxy, "token_endpoint": target.tokenEndpoint,
                "connections": self.settings.connections, "rate": jsonNumber(self.outcome.rate),
                "duration_s": self.settings.duration.seconds, "warmup_s": self.settings.warmup.seconds,
                "refresh_every_s": self.settings.refreshEvery.seconds,
                "storms_per_minute": Precision.ratio(60 / self.settings.refreshEvery.seconds),
            ] as [String: Any],
            "interrupted": self.outcome.interrupted,
            "phases": Dictionary(uniqueKeysWithValues: self.phases.map { ($0.phase.name, Self.phaseObject($0)) }),
            "token_calls_note": self.tokenCallsNote,
        ]
        if let storms = self.stormPhase {
            document["storms"] = storms.phase.storms.count
            document["token_calls"] = jsonNumber(storms.phase.refreshesEnded.map(Double.init))
        }
        return (try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }

    private static func latencyObject(_ latency: LatencyStatistics) -> [String: Any] {
        [
            "p50": latency.p50Milliseconds, "p99": latency.p99Milliseconds, "p999": latency.p999Milliseconds,
            "max": latency.maxMilliseconds,
        ].mapValues(Precision.milliseconds)
    }

    private static func phaseObject(_ figures: PhaseFigures) -> [String: Any] {
        let phase = figures.phase
        return [
            "duration_s": Precision.seconds(phase.load.measuredSeconds),
            "requests": figures.requests,
            "requests_per_second": Precision.rate(figures.requestsPerSecond),
            "latency_ms": Self.latencyObject(figures.latency),
            "errors": [
                "upstream_statuses": Dictionary(
                    uniqueKeysWithValues: figures.upstreamStatuses.map { ("\($0.key)", $0.value) }
                ),
                "refresh_failures": figures.refreshFailures,
                "connections": phase.load.errors,
            ] as [String: Any],
            "token_calls": jsonNumber(phase.refreshesEnded.map(Double.init)),
            "storms": figures.storms.map { storm -> [String: Any] in
                [
                    "at_s": Precision.seconds(storm.storm.start),
                    "answered_at_s": Precision.seconds(storm.storm.end),
                    "outcome": storm.storm.outcome,
                    "joined_natural_refresh": storm.storm.joined,
                    "token_generation": jsonNumber(storm.storm.generation.map(Double.init)),
                    "refresh_ms": jsonNumber(storm.storm.refresh?.seconds.map { Precision.milliseconds($0 * 1000) }),
                    "proxy_waiting_requests": jsonNumber(storm.storm.refresh?.waitingRequests.map(Double.init)),
                    "parked_requests": storm.parked,
                    "parked_wait_ms": Self.latencyObject(storm.waits),
                ]
            },
            "parked_requests": figures.storms.map(\.parked).reduce(0, +),
            "parked_wait_ms": Self.latencyObject(figures.parkedWaits),
            "natural_refreshes": phase.naturals.map { natural -> [String: Any] in
                [
                    "seen_at_s": Precision.seconds(natural.seenAt), "trigger": natural.refresh.trigger ?? "unknown",
                    "outcome": natural.refresh.outcome,
                    "refresh_ms": jsonNumber(natural.refresh.seconds.map { Precision.milliseconds($0 * 1000) }),
                    "waiting_requests": jsonNumber(natural.refresh.waitingRequests.map(Double.init)),
                ]
            },
            "series": figures.series.map {
                [
                    "t": Precision.seconds($0.startSeconds), "rps": Precision.rate($0.requestsPerSecond),
                    "p50_ms": Precision.milliseconds($0.p50Milliseconds),
                    "p99_ms": Precision.milliseconds($0.p99Milliseconds),
                    "p999_ms": Precision.milliseconds($0.p999Milliseconds),
                ]
            },
        ]
    }

    // MARK: Chart

    /// The two phases as the bench's chart draws scenarios: each storm a dashed line, each token call
    /// (a storm's refresh ending, a natural refresh) a triangle.
    var svg: String {
        let results = self.phases.map { figures -> ScenarioResult in
            let phase = figures.phase
            let nonSuccess = figures.upstreamStatuses
            return ScenarioResult(
                name: phase.name,
                connections: self.settings.connections,
                durationSeconds: phase.load.measuredSeconds,
                requests: figures.requests,
                requestsPerSecond: figures.requestsPerSecond,
                latency: figures.latency,
                errors: phase.load.errors,
                statuses: nonSuccess,
                client401s: nonSuccess[401] ?? 0,
                tokenCalls: phase.refreshesEnded ?? 0,
                expiryEvents: phase.storms.count,
                replays: 0,
                maxTimesSeenUpstream: 0,
                series: figures.series,
                expiryTimes: phase.storms.map(\.start),
                refreshTimes: (phase.storms.filter { !$0.joined }.map(\.end) + phase.naturals.map(\.seenAt)).sorted()
            )
        }
        return SVGChart.render(results, labels: .storms)
    }
}
