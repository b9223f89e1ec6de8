import BearerCore
import BearerDemo
import BearerTestSupport
import Foundation
import Glibc

/// The DPoP scenarios (RFC 9449): steady's load, and the expiry storm, through a proxy whose token
/// endpoint issues DPoP-bound tokens, against an API that wants a proof with every request.
extension Bench {
    /// The API checks one proof in this many with OpenSSL's verifier (a verify costs about three
    /// signatures: checking every one, the one mock loop would limit the run, not the proxy), on a
    /// thread of its own after answering (inline, the checked requests would be the p99); every
    /// request still needs a proof and a token bound to the key the token endpoint saw.
    static let dpopChecksOneIn = 64

    func runDPoP(_ scenario: BenchOptions.Scenario, round: String) throws -> ScenarioResult {
        let api = try self.dpopUpstream()
        self.tokenServer.update {
            $0.expiresIn = nil
            // Every token request's proof is checked: the token is bound to the key it names.
            $0.dpop = MockDPoPRules()
        }
        defer { self.tokenServer.update { $0.dpop = nil } }
        let config = self.proxyConfig(
            upstream: api.baseURL,
            extra: "dpop = on\ndpop_key_file = \(self.dpopKeyFolder)/dpop-key.pem"
        )
        let callsBefore = self.tokenServer.callCount
        let refusedBefore = api.dpop?.failures.count ?? 0
        var result = try self.withProxy(config: config) { proxy, target in
            // The start-up token call, under DPoP, before measuring.
            _ = waitUntil(timeout: .seconds(5)) { self.tokenServer.callCount != callsBefore }
            return self.measure(
                name: scenario.rawValue,
                round: round,
                targets: [target],
                proxies: [proxy],
                expireEvery: scenario == .dpopExpiry ? self.options.expireEvery : nil,
                apis: [self.defaultAPI(upstream: api)]
            )
        }
        // The API's sampled checks ran after their requests were answered: a proof they refused is
        // an error of the round, as a 401 would have been.
        api.dpop?.finishChecks()
        let refused = (api.dpop?.failures.count ?? 0) - refusedBefore
        if refused > 0 { result.errors["DPoP proof refused by the API's check", default: 0] += refused }
        if scenario == .dpop {
            // In the same minute: what one signature costs on this machine now, to compare the extra
            // CPU per request with.
            result.signatureMicroseconds = OpenSSLSpeed.ecdsaP256SignMicroseconds()
        }
        return result
    }

    private func dpopUpstream() throws -> MockUpstream {
        if let api = self.dpopAPI { return api }
        let api = MockUpstream(
            group: self.mockGroup,
            authority: self.authority,
            recordsRequests: false,
            countsRequestIDs: true,
            dpop: MockDPoPRules(checksOneIn: Self.dpopChecksOneIn, checksInBackground: true)
        )
        try api.start()
        self.dpopAPI = api
        return api
    }
}

/// `openssl speed -seconds 3 ecdsap256`: the CPU time of one ECDSA P-256 signature (OpenSSL counts
/// its user time), the unit the DPoP scenario's extra CPU per request is given in.
enum OpenSSLSpeed {
    static func ecdsaP256SignMicroseconds(seconds: Int = 3) -> Double? {
        guard let pipe = popen("openssl speed -seconds \(seconds) -mr ecdsap256 2>/dev/null", "r") else { return nil }
        var output = ""
        var buffer = [CChar](repeating: 0, count: 512)
        while fgets(&buffer, Int32(buffer.count), pipe) != nil {
            output += String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard pclose(pipe) == 0 else { return nil }
        return Self.signMicroseconds(fromMachineReadable: output)
    }

    /// From `-mr` output's `+F4:<index>:256:<sign/s>:<verify/s>` line.
    static func signMicroseconds(fromMachineReadable output: String) -> Double? {
        for line in output.split(separator: "\n") where line.hasPrefix("+F4:") {
            let fields = line.split(separator: ":")
            guard fields.count >= 5, fields[2] == "256", let perSecond = Double(fields[3]), perSecond > 0 else {
                continue
            }
            return 1_000_000 / perSecond
        }
        return nil
    }
}
