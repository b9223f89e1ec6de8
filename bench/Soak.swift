import BearerCore
import BearerIO
import BearerTestSupport
import Dispatch
import Foundation
import Glibc

/// `--soak DURATION`: one long round of each chosen scenario under the expiry storm (every token
/// revoked each `--expire-every`), with one connection in eight reconnecting after every response (a
/// new tunnel and handshake, through interception), while the proxy's resident memory, open
/// descriptors and log queue are sampled. What a leak looks like is growth after the warm-up, which
/// a five-second run cannot show; the report gives it for each figure.
struct SoakPlan: Sendable {
    var sampleEvery: Duration

    /// Of every eight connections one rotates. Few enough that the client's TIME_WAIT sockets stay far
    /// below the ephemeral port range at a bounded rate, enough that connection setup and teardown run
    /// all the time.
    func rotating(_ targets: [LoadGenerator.Target]) -> [LoadGenerator.Target] {
        guard let first = targets.first else { return targets }
        var rotating = first
        rotating.reconnectsAfterEachResponse = true
        return Array(repeating: first, count: 7) + [rotating]
    }
}

/// Samples one proxy process from its own thread until stopped.
final class SoakSampler: @unchecked Sendable {
    struct Sample: Equatable {
        /// Since the measurement started.
        var seconds: Double
        var residentMiB: Double
        var descriptors: Int
        /// `bearer_proxy_log_queue_bytes`; nil when the admin did not answer.
        var logQueueBytes: Int?
    }

    private let samples = Locked<[Sample]>([])
    private let stopping = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts sampling `proxy` every `interval`, the first sample at once.
    init(_ proxy: ChildProxy, every interval: Duration) {
        let start = Instant.now()
        let admin = Self.adminAddress(of: proxy)
        _ = spawnThread(name: "soak-sampler") { [samples, stopping, finished] in
            repeat {
                let memory = proxy.memory
                let sample = Sample(
                    seconds: (Instant.now() - start).seconds,
                    residentMiB: memory.currentMiB,
                    descriptors: Self.openDescriptors(of: proxy.pid),
                    logQueueBytes: admin.flatMap(Self.logQueueBytes)
                )
                samples.withLock { $0.append(sample) }
            } while stopping.wait(timeout: .now() + .nanoseconds(Int(interval.nanoseconds))) == .timedOut
            finished.signal()
        }
    }

    /// Stops sampling; the samples taken.
    func stop() -> [Sample] {
        self.stopping.signal()
        self.finished.wait()
        return self.samples.withLock { $0 }
    }

    /// The admin listener's unix socket, from the proxy's config (`Bench.proxyConfig` adds it).
    private static func adminAddress(of proxy: ChildProxy) -> SocketAddress? {
        guard let path = proxy.configPath, let config = try? String(contentsOfFile: path, encoding: .utf8),
            let line = config.split(separator: "\n").first(where: { $0.hasPrefix("admin_listen = unix:") })
        else { return nil }
        return .unix(path: String(line.dropFirst("admin_listen = unix:".count)))
    }

    private static func openDescriptors(of pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    private static func logQueueBytes(_ admin: SocketAddress) -> Int? {
        guard let metrics = try? httpRequest(admin, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").text,
            let line = metrics.split(separator: "\n").first(where: { $0.hasPrefix("bearer_proxy_log_queue_bytes ") })
        else { return nil }
        return Int(line.split(separator: " ")[1])
    }
}

/// What a soak found for one scenario: the samples, and each figure's growth from just after the
/// warm-up (the first tenth of the run, at least one minute when the run is long enough) to the end.
struct SoakResult {
    let scenario: String
    let samples: [SoakSampler.Sample]
    let warmupSeconds: Double
    /// Every request answered with a 2xx, token calls against expiry events.
    let result: ScenarioResult

    /// The goal: resident memory and descriptors within 5% of their value after the warm-up.
    static let flatWithin = 5.0

    init(scenario: String, samples: [SoakSampler.Sample], durationSeconds: Double, result: ScenarioResult) {
        self.scenario = scenario
        self.samples = samples
        self.warmupSeconds = min(max(durationSeconds / 10, 60), durationSeconds / 2)
        self.result = result
    }

    /// A figure's median over the first three samples after the warm-up and over the last three.
    func span(_ value: (SoakSampler.Sample) -> Double) -> (after: Double, end: Double)? {
        let measured = self.samples.filter { $0.seconds >= self.warmupSeconds }
        guard measured.count >= 2 else { return nil }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let head = measured.prefix(3).map(value)
        let tail = measured.suffix(3).map(value)
        return (median(Array(head)), median(Array(tail)))
    }

    /// Growth in percent of the value after the warm-up.
    func growth(_ value: (SoakSampler.Sample) -> Double) -> Double? {
        guard let (after, end) = self.span(value), after > 0 else { return nil }
        return (end - after) / after * 100
    }

    var residentGrowth: Double? { self.growth(\.residentMiB) }
    var descriptorGrowth: Double? { self.growth { Double($0.descriptors) } }
    var isFlat: Bool {
        [self.residentGrowth, self.descriptorGrowth].allSatisfy { ($0 ?? .infinity) <= Self.flatWithin }
    }
    var allAnswered: Bool { self.result.errors.isEmpty && self.result.client401s == 0 }

    /// Lines for the terminal: a sample a minute (at most 40), then the verdict.
    var text: String {
        var lines = [
            "soak \(self.scenario): \(formatSeconds(self.result.durationSeconds)) measured, \(self.samples.count) samples"
        ]
        lines.append("  time      RSS MiB   fds   log queue")
        let stride = max(1, self.samples.count / 40)
        for (index, sample) in self.samples.enumerated() where index % stride == 0 || index == self.samples.count - 1 {
            let queue = sample.logQueueBytes.map { "\($0) B" } ?? "-"
            lines.append(
                String(
                    format: "  %7@  %8.1f  %4d   %@",
                    formatSeconds(sample.seconds),
                    sample.residentMiB,
                    sample.descriptors,
                    queue
                )
            )
        }
        func percent(_ value: Double?) -> String { value.map { String(format: "%+.1f%%", $0) } ?? "n/a" }
        let resident = self.span(\.residentMiB)
        let descriptors = self.span { Double($0.descriptors) }
        lines.append(
            "  after the warm-up (\(formatSeconds(self.warmupSeconds))) to the end: RSS "
                + (resident.map { String(format: "%.1f → %.1f MiB", $0.after, $0.end) } ?? "n/a")
                + " (\(percent(self.residentGrowth))), descriptors "
                + (descriptors.map { "\(Int($0.after)) → \(Int($0.end))" } ?? "n/a")
                + " (\(percent(self.descriptorGrowth))), log queue at most \(self.samples.compactMap(\.logQueueBytes).max() ?? 0) B"
        )
        lines.append(
            "  requests \(self.result.requests), errors \(self.errorsByKind), 401s to clients \(self.result.client401s), token calls \(self.result.tokenCalls) for \(self.result.expiryEvents) expiry events"
        )
        lines.append(
            "  verdict: "
                + (self.isFlat
                    ? "flat (within \(Int(Self.flatWithin))%)" : "GROWS (more than \(Int(Self.flatWithin))%)")
                + (self.allAnswered ? ", every request answered" : ", NOT every request answered")
        )
        return lines.joined(separator: "\n") + "\n"
    }

    /// `0`, or each kind of error with its count.
    var errorsByKind: String {
        let errors = self.result.errors.sorted { $0.key < $1.key }
        return errors.isEmpty ? "0" : errors.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }

    var json: [String: Any] {
        [
            "errors": self.result.errors,
            "client_401s": self.result.client401s,
            "scenario": self.scenario,
            "warmup_seconds": self.warmupSeconds,
            "rss_growth_percent": self.residentGrowth ?? NSNull(),
            "fd_growth_percent": self.descriptorGrowth ?? NSNull(),
            "flat": self.isFlat,
            "every_request_answered": self.allAnswered,
            "requests": self.result.requests,
            "token_calls": self.result.tokenCalls,
            "expiry_events": self.result.expiryEvents,
            "samples": self.samples.map { sample -> [String: Any] in
                [
                    "seconds": (sample.seconds * 10).rounded() / 10,
                    "rss_mib": (sample.residentMiB * 10).rounded() / 10,
                    "fds": sample.descriptors,
                    "log_queue_bytes": sample.logQueueBytes ?? NSNull(),
                ]
            },
        ]
    }

    /// Resident memory and descriptors over time, one panel each, the warm-up shaded off by a dashed line.
    static func svg(_ results: [SoakResult]) -> String {
        let width = 900.0
        let panelHeight = 160.0
        var document = SVGDocument()
        var y = 30.0
        let colors = ["#2a6fdb", "#d33", "#2a9d55", "#b07d00"]
        document.titledText("bearer-bench --soak", results.map(\.scenario).joined(separator: ", "), x: 60, y: y - 8)
        for (title, value) in [
            ("resident memory, MiB", { (sample: SoakSampler.Sample) in sample.residentMiB }),
            ("open descriptors", { (sample: SoakSampler.Sample) in Double(sample.descriptors) }),
        ] {
            let top = y + 12
            let maximum = results.flatMap { $0.samples.map(value) }.max() ?? 1
            let axis = ChartAxis.linear(upTo: maximum * 1.1)
            let seconds = results.flatMap { $0.samples.map(\.seconds) }.max() ?? 1
            document.text(title, x: 60, y: top - 2, size: 12, weight: "bold")
            document.frame(x: 60, y: top, width: width - 80, height: panelHeight)
            for tick in axis.ticks {
                let tickY = top + panelHeight * (1 - axis.fraction(tick))
                document.text(trimmed(tick), x: 54, y: tickY + 4, size: 10, anchor: "end", fill: "#666")
            }
            for (index, result) in results.enumerated() {
                let points = result.samples.map { sample in
                    (
                        60 + (width - 80) * sample.seconds / seconds,
                        top + panelHeight * (1 - axis.fraction(value(sample)))
                    )
                }
                document.polyline(points, color: colors[index % colors.count], width: 1.5)
                let warmupX = 60 + (width - 80) * result.warmupSeconds / seconds
                document.line(
                    x1: warmupX,
                    y1: top,
                    x2: warmupX,
                    y2: top + panelHeight,
                    color: "#999",
                    width: 1,
                    dashed: true
                )
            }
            y = top + panelHeight + 30
        }
        for (index, result) in results.enumerated() {
            document.text(
                "— \(result.scenario)",
                x: 60 + Double(index) * 160,
                y: y - 8,
                size: 12,
                fill: colors[index % colors.count]
            )
        }
        document.text(
            "time: \(formatSeconds(results.map(\.result.durationSeconds).max() ?? 0)); dashed: end of the warm-up",
            x: width - 20,
            y: y - 8,
            size: 11,
            anchor: "end",
            fill: "#666"
        )
        return document.finish(width: width, height: y + 4)
    }
}
