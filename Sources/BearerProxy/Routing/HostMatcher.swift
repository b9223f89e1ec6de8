import BearerHTTP

/// Host names as a request's bytes carry them (lower-cased, an IPv6 literal in brackets), so that
/// routing compares bytes in place instead of building a `String` for every absolute-form request.
struct EncodedHost: Equatable, Sendable {
    let bytes: [UInt8]

    /// `host` as configured: lower-cased, without brackets.
    init(_ host: String) {
        let lower = host.lowercased()
        self.bytes = Array((lower.contains(":") ? "[\(lower)]" : lower).utf8)
    }

    /// Whether `raw[range]` spells this host, ignoring case.
    func isSpelled(by raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard range.count == self.bytes.count else { return false }
        var index = 0
        for expected in self.bytes {
            if lowercased(raw[range.lowerBound + index]) != expected { return false }
            index += 1
        }
        return true
    }

    /// Whether `raw[range]` ends with `.` followed by this host (a subdomain of it), ignoring case.
    func isParentDomain(of raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard range.count > self.bytes.count + 1 else { return false }
        let suffixStart = range.upperBound - self.bytes.count
        guard raw[suffixStart - 1] == UInt8(ascii: ".") else { return false }
        return self.isSpelled(by: raw, suffixStart..<range.upperBound)
    }
}

/// A `HostPattern` (inject_hosts, accept_hosts) compiled to bytes.
struct HostMatcher: Sendable {
    private enum Rule: Sendable {
        case host(EncodedHost)
        case hostAndPort(EncodedHost, Int)
        case subdomains(of: EncodedHost)
    }

    private let rules: [Rule]

    init(_ patterns: [HostPattern]) {
        self.rules = patterns.map { pattern in
            switch pattern {
            case .host(let host): .host(EncodedHost(host))
            case .hostAndPort(let host, let port): .hostAndPort(EncodedHost(host), port)
            case .subdomains(let domain): .subdomains(of: EncodedHost(domain))
            }
        }
    }

    /// Whether a request to the host at `raw[host]` on `port` matches one of the patterns.
    func matches(_ raw: UnsafeRawBufferPointer, host: Range<Int>, port: Int) -> Bool {
        for rule in self.rules {
            switch rule {
            case .host(let expected):
                if expected.isSpelled(by: raw, host) { return true }
            case .hostAndPort(let expected, let expectedPort):
                if port == expectedPort && expected.isSpelled(by: raw, host) { return true }
            case .subdomains(let domain):
                if domain.isParentDomain(of: raw, host) { return true }
            }
        }
        return false
    }
}

@inline(__always)
private func lowercased(_ byte: UInt8) -> UInt8 {
    (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
}
