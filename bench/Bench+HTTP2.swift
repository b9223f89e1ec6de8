import BearerCore
import BearerTestSupport
import Foundation
import Glibc

/// `h2-expiry`: expiry's storm with HTTP/2 clients, h2load (Debian's nghttp2-client) speaking h2 with
/// prior knowledge to the proxy, several streams in flight on each connection. The bench's own load
/// generator speaks HTTP/1.1 only; h2load measures what it measures (requests and their statuses,
/// not per-request latencies, which it reports only as a distribution of its own).
extension Bench {
    /// Streams each h2load client keeps in flight.
    static let h2StreamsPerConnection = 8

    func runHTTP2Expiry(round: String) throws -> ScenarioResult {
        let h2load = try executable(
            ["/usr/bin/h2load", "/usr/local/bin/h2load"],
            missing: "h2-expiry: h2load is not installed (apt-get install nghttp2-client)"
        )
        self.tokenServer.update { $0.expiresIn = nil }
        return try self.withProxy { proxy, target in
            let port = target.address.port ?? 0
            let api = self.defaultAPI(upstream: self.upstream)
            let label = round.isEmpty ? "h2-expiry" : "h2-expiry, \(round)"
            self.log(
                "\(label): h2load, \(self.options.connections) connections × \(Self.h2StreamsPerConnection) streams, \(formatSeconds(self.options.warmup)) warm-up, \(formatSeconds(self.options.duration)) measured"
            )
            let tokenCallsBefore = api.tokenServer.callCount
            let rejectedBefore = api.upstream.rejected.load(ordering: .relaxed)
            let cpuBefore = proxy.cpuSeconds
            let start = Instant.now() + self.options.warmup
            let storm = ExpiryTimer(
                every: self.options.expireEvery,
                until: start + self.options.duration - .milliseconds(200),
                authority: api.authority
            )
            let sampler = self.soak.map { SoakSampler(proxy, every: $0.sampleEvery) }
            var arguments = [
                h2load, "-c", "\(self.options.connections)", "-m", "\(Self.h2StreamsPerConnection)",
                "-D", "\(Int(self.options.duration.seconds.rounded(.up)))",
                "--warm-up-time", "\(Int(self.options.warmup.seconds.rounded(.up)))",
            ]
            if let rate = self.options.rate {
                // h2load's rate is per client.
                arguments += ["--rps", "\(max(1, Int((rate / Double(self.options.connections)).rounded())))"]
            }
            arguments.append("http://127.0.0.1:\(port)/bench")
            let outcome = try? runProgram(
                arguments,
                timeout: self.options.warmup + self.options.duration + .seconds(60)
            )
            let samples = sampler?.stop() ?? []
            // Every revocation, the warm-up's too: the token calls counted are the whole run's.
            let expiries = storm.stop()
            // A revocation just before the end is refreshed a moment later: let that call land.
            usleep(300_000)
            let counts = H2LoadCounts(outcome?.standardOutput ?? "")
            var errors: [String: Int] = [:]
            if outcome?.status != 0 { errors["h2load failed: \(oneLine(outcome?.standardError ?? "not run"))"] = 1 }
            // A non-2xx answer is counted by its class below (h2load counts it as failed too).
            if counts.errored > 0 { errors["h2load: stream errors"] = counts.errored }
            for (status, count) in counts.statuses where status != 2 && count > 0 {
                errors["status \(status)xx"] = count
            }
            let rejected = api.upstream.rejected.load(ordering: .relaxed) - rejectedBefore
            let measured = self.options.duration.seconds
            let result = ScenarioResult(
                name: "h2-expiry",
                proxies: 1,
                connections: self.options.connections,
                durationSeconds: measured,
                requests: counts.succeeded,
                requestsPerSecond: Double(counts.succeeded) / max(measured, 0.001),
                latency: LatencyStatistics(microseconds: []),
                errors: errors,
                statuses: [:],
                client401s: 0,
                tokenCalls: api.tokenServer.callCount - tokenCallsBefore,
                expiryEvents: expiries.count,
                replays: rejected,
                maxTimesSeenUpstream: 0,
                proxyPeakRSSMiB: proxy.memory.peakMiB,
                proxyCPUSeconds: proxy.cpuSeconds - cpuBefore,
                resumedHandshakes: 0,
                series: [],
                expiryTimes: expiries.map { ($0 - start).seconds },
                refreshTimes: [],
                sessions: []
            )
            if self.soak != nil {
                self.recordSoak(
                    SoakResult(scenario: "h2-expiry", samples: samples, durationSeconds: measured, result: result)
                )
            }
            return result
        }
    }
}

/// The totals h2load prints: `requests: N total, N started, N done, N succeeded, N failed, N
/// errored, N timeout` and `status codes: N 2xx, N 3xx, N 4xx, N 5xx`.
struct H2LoadCounts: Equatable {
    var succeeded = 0
    var failed = 0
    var errored = 0
    /// By class: 2 for 2xx … 5 for 5xx.
    var statuses: [Int: Int] = [:]

    init(_ output: String) {
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("requests:") {
                for field in fields {
                    let words = field.replacingOccurrences(of: "requests: ", with: "").split(separator: " ")
                    guard words.count == 2, let count = Int(words[0]) else { continue }
                    switch words[1] {
                    case "succeeded": self.succeeded = count
                    case "failed": self.failed = count
                    case "errored": self.errored = count
                    default: break
                    }
                }
            } else if line.hasPrefix("status codes:") {
                for field in fields {
                    let words = field.replacingOccurrences(of: "status codes: ", with: "").split(separator: " ")
                    guard words.count == 2, let count = Int(words[0]), words[1].hasSuffix("xx"),
                        let kind = Int(words[1].prefix(1))
                    else { continue }
                    self.statuses[kind] = count
                }
            }
        }
    }
}
