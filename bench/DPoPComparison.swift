/// What DPoP costs against plain bearer tokens, from the rounds in which both `steady` and `dpop`
/// ran: the proxy's extra CPU per request, in microseconds and in signatures (the round's
/// `openssl speed`), and the difference of the p99s. Per round, then median and range: the two
/// scenarios of one round ran a few seconds apart.
struct DPoPComparison: Equatable {
    var steadyCPUMicroseconds: Spread
    var dpopCPUMicroseconds: Spread
    var extraCPUMicroseconds: Spread
    /// One signature's CPU time, per round.
    var signatureMicroseconds: Spread?
    /// The extra CPU per request divided by one signature, per round.
    var extraInSignatures: Spread?
    var p99DifferenceMilliseconds: Spread

    static func compute(_ summaries: [ScenarioSummary]) -> DPoPComparison? {
        guard let plainRounds = summaries.first(where: { $0.name == "steady" })?.rounds,
            let boundRounds = summaries.first(where: { $0.name == "dpop" })?.rounds
        else { return nil }
        var steady: [Double] = []
        var dpop: [Double] = []
        var signatures: [Double] = []
        var inSignatures: [Double] = []
        var p99: [Double] = []
        // The scenarios of a round are grouped in round order: the n-th of each ran in round n.
        for (plain, bound) in zip(plainRounds, boundRounds) {
            guard let plainCPU = plain.proxyCPUMicrosecondsPerRequest,
                let boundCPU = bound.proxyCPUMicrosecondsPerRequest
            else { continue }
            steady.append(plainCPU)
            dpop.append(boundCPU)
            p99.append(bound.latency.p99Milliseconds - plain.latency.p99Milliseconds)
            if let signature = bound.signatureMicroseconds, signature > 0 {
                signatures.append(signature)
                inSignatures.append((boundCPU - plainCPU) / signature)
            }
        }
        guard !steady.isEmpty else { return nil }
        return DPoPComparison(
            steadyCPUMicroseconds: Spread(steady),
            dpopCPUMicroseconds: Spread(dpop),
            extraCPUMicroseconds: Spread(zip(dpop, steady).map { $0 - $1 }),
            signatureMicroseconds: signatures.isEmpty ? nil : Spread(signatures),
            extraInSignatures: inSignatures.isEmpty ? nil : Spread(inSignatures),
            p99DifferenceMilliseconds: Spread(p99)
        )
    }

    /// The report's lines.
    var lines: [String] {
        func figure(_ spread: Spread, _ decimals: Int, sign: Bool = false) -> String {
            let prefix = sign && spread.median >= 0 ? "+" : ""
            return prefix + format(spread.median, decimals)
                + (spread.range > 0
                    ? " (rounds \(format(spread.minimum, decimals))–\(format(spread.maximum, decimals)))" : "")
        }
        var lines = [
            "proxy CPU per request: steady \(figure(self.steadyCPUMicroseconds, 1)) µs, dpop \(figure(self.dpopCPUMicroseconds, 1)) µs",
            "dpop extra CPU per request  \(figure(self.extraCPUMicroseconds, 1)) µs",
        ]
        if let signatures = self.extraInSignatures, let signature = self.signatureMicroseconds {
            lines.append(
                "dpop extra CPU / one ES256 signature  \(figure(signatures, 2)) × (a signature "
                    + "\(figure(signature, 1)) µs, openssl speed ecdsap256)"
            )
        }
        lines.append("dpop p99 - steady p99  \(figure(self.p99DifferenceMilliseconds, 2, sign: true)) ms")
        return lines
    }

    /// The JSON object `dpop`.
    var json: [String: Any] {
        func pair(_ spread: Spread?, _ decimals: Int) -> Any {
            guard let spread else { return jsonNumber(nil) }
            return [
                "median": Precision.rounded(spread.median, decimals),
                "range": [spread.minimum, spread.maximum].map { Precision.rounded($0, decimals) },
            ]
        }
        return [
            "steady_cpu_us_per_request": pair(self.steadyCPUMicroseconds, 2),
            "dpop_cpu_us_per_request": pair(self.dpopCPUMicroseconds, 2),
            "extra_cpu_us_per_request": pair(self.extraCPUMicroseconds, 2),
            "signature_us": pair(self.signatureMicroseconds, 2),
            "extra_cpu_in_signatures": pair(self.extraInSignatures, 3),
            "p99_difference_ms": pair(self.p99DifferenceMilliseconds, 3),
        ]
    }
}
