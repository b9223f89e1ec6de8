import BearerHTTP
import COpenSSL
import Glibc

/// The names a CA certificate may vouch for (RFC 5280 §4.2.1.10, permitted subtrees only): DNS
/// subtrees and IP address ranges, made from inject_hosts patterns.
///
/// - `host` and `host:port`: the DNS subtree `host`, or, for an IP address, that address alone (`/32`,
///   `/128`). Ports are not part of a certificate.
/// - `*.domain`: the DNS subtree `domain`. Under RFC 5280 a DNS constraint permits the name itself and
///   every name made by adding labels on the left, so `domain` permits `domain` too, one name more than
///   the pattern matches. The leading-dot form `.domain` (subdomains only) is RFC 5280's for URI and
///   e-mail constraints, not DNS ones: OpenSSL, Go and Java 17 read it as subdomains-only (tried), but
///   a validator that keeps to the RFC need not, so the form every client reads alike is used. The
///   extra name is never presented: the proxy intercepts only hosts that inject_hosts matches.
///
/// Both name types are always constrained, because RFC 5280 leaves a type without a permitted subtree
/// unlimited: no DNS host gives the DNS subtree `invalid` (RFC 2606, never resolves), and each IP
/// family without an address gives the one range no host has (`0.0.0.0/32`, `::/128`).
package struct NameConstraints: Equatable, Sendable, CustomStringConvertible {
    /// Lower-case DNS subtrees, most general first within what was given.
    var dnsSubtrees: [String]
    /// Address and mask, 4 + 4 or 16 + 16 bytes.
    var ipRanges: [IPRange]

    struct IPRange: Equatable, Sendable, CustomStringConvertible {
        var address: [UInt8]
        var mask: [UInt8]

        /// One address: an all-ones mask.
        init(address: [UInt8]) {
            self.address = address
            self.mask = [UInt8](repeating: 0xff, count: address.count)
        }

        init(address: [UInt8], mask: [UInt8]) {
            self.address = address
            self.mask = mask
        }

        func contains(_ candidate: [UInt8]) -> Bool {
            candidate.count == self.address.count
                && zip(zip(candidate, self.address), self.mask).allSatisfy { pair, mask in
                    pair.0 & mask == pair.1 & mask
                }
        }

        /// `127.0.0.1/32`, `::1/128`, `10.0.0.0/8` (a mask that is not a prefix prints as an address).
        var description: String {
            let prefix = self.mask.reduce(0) { $0 + $1.nonzeroBitCount }
            let isPrefix =
                self.mask.map { ~$0 }.allSatisfy { ($0 &+ 1) & $0 == 0 }
                && zip(self.mask, self.mask.dropFirst()).allSatisfy { $0 == 0xff || $1 == 0 }
            return "\(formatIPAddress(self.address))/\(isPrefix ? "\(prefix)" : formatIPAddress(self.mask))"
        }
    }

    /// The DNS subtree that stands for "no DNS name".
    static let noDNSName = "invalid"

    /// The constraints that permit exactly the hosts of `patterns` (and nothing of a type they lack).
    package init(permitting patterns: [HostPattern]) {
        var dns: [String] = []
        var ip: [IPRange] = []
        for pattern in patterns {
            switch pattern {
            case .host(let host), .hostAndPort(let host, _):
                if let address = parseIPAddress(host) {
                    ip.append(IPRange(address: address))
                } else {
                    dns.append(host.lowercased())
                }
            case .subdomains(let domain):
                dns.append(domain.lowercased())
            }
        }
        // A subtree inside another adds nothing: `api.example.com` under `example.com`.
        var kept: [String] = []
        for name in dns where !dns.contains(where: { $0 != name && dnsName(name, isWithin: $0) }) {
            if !kept.contains(name) { kept.append(name) }
        }
        var ranges: [IPRange] = []
        for range in ip where !ranges.contains(range) { ranges.append(range) }
        if kept.isEmpty { kept = [Self.noDNSName] }
        if !ranges.contains(where: { $0.address.count == 4 }) { ranges.append(IPRange(address: [0, 0, 0, 0])) }
        if !ranges.contains(where: { $0.address.count == 16 }) {
            ranges.append(IPRange(address: [UInt8](repeating: 0, count: 16)))
        }
        self.dnsSubtrees = kept
        self.ipRanges = ranges
    }

    init(dnsSubtrees: [String], ipRanges: [IPRange]) {
        self.dnsSubtrees = dnsSubtrees
        self.ipRanges = ipRanges
    }

    /// Whether every host `pattern` matches is inside these constraints.
    func permits(_ pattern: HostPattern) -> Bool {
        switch pattern {
        case .host(let host), .hostAndPort(let host, _): self.permits(host: host)
        // Every subdomain of `domain` is within a subtree that holds `domain`, or whose leading-dot form
        // (subdomains only) names `domain`.
        case .subdomains(let domain):
            self.dnsSubtrees.contains { dnsName(domain.lowercased(), isWithin: $0) || $0 == "." + domain.lowercased() }
        }
    }

    /// Whether a certificate for `host` (a DNS name or an IP address) would be within these constraints.
    func permits(host: String) -> Bool {
        if let address = parseIPAddress(host) { return self.ipRanges.contains { $0.contains(address) } }
        return self.dnsSubtrees.contains { dnsName(host.lowercased(), isWithin: $0) }
    }

    /// The extension's value in OpenSSL's configuration syntax, marked critical.
    var extensionValue: String {
        let names =
            self.dnsSubtrees.map { "permitted;DNS:\($0)" }
            + self.ipRanges.map { "permitted;IP:\(formatIPAddress($0.address))/\(formatIPAddress($0.mask))" }
        return "critical," + names.joined(separator: ",")
    }

    /// `DNS:example.com, IP:127.0.0.1/32`, for messages.
    package var description: String {
        (self.dnsSubtrees.map { "DNS:\($0)" } + self.ipRanges.map { "IP:\($0)" }).joined(separator: ", ")
    }

    /// The permitted subtrees of `certificate`'s nameConstraints extension, when it is critical; nil
    /// when it has none, it is not critical, or it names a type other than DNS and IP (not ours).
    init?(of certificate: X509Certificate) {
        guard let (value, isCritical) = certificate.decodedExtension(NID_name_constraints) else { return nil }
        let constraints = value.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
        defer { NAME_CONSTRAINTS_free(constraints) }
        guard isCritical, let permitted = constraints.pointee.permittedSubtrees else { return nil }
        var dns: [String] = []
        var ranges: [IPRange] = []
        for index in 0..<cos_subtrees_count(permitted) {
            guard let subtree = cos_subtree_at(permitted, index), let name = subtree.pointee.base else {
                return nil
            }
            switch name.pointee.type {
            case GEN_DNS:
                dns.append(String(decoding: asn1Bytes(name.pointee.d.dNSName), as: UTF8.self).lowercased())
            case GEN_IPADD:
                let bytes = asn1Bytes(name.pointee.d.iPAddress)
                guard bytes.count == 8 || bytes.count == 32 else { return nil }
                ranges.append(
                    IPRange(address: Array(bytes.prefix(bytes.count / 2)), mask: Array(bytes.suffix(bytes.count / 2)))
                )
            default:
                return nil
            }
        }
        self.init(dnsSubtrees: dns, ipRanges: ranges)
    }
}

/// RFC 5280 §4.2.1.10: `name` is within the DNS subtree `base` when it is `base`, or `base` with labels
/// added on the left (`api.example.com` is within `example.com`, `badexample.com` is not).
func dnsName(_ name: String, isWithin base: String) -> Bool {
    if base.isEmpty { return true }
    if base.hasPrefix(".") { return name.hasSuffix(base) }
    return name == base || name.hasSuffix("." + base)
}

/// The bytes of an IPv4 or IPv6 literal (IPv6 without brackets); nil for anything else.
func parseIPAddress(_ text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
    return nil
}

/// `127.0.0.1`, `::1`: the canonical text of 4 or 16 address bytes.
func formatIPAddress(_ bytes: [UInt8]) -> String {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    let family = bytes.count == 4 ? AF_INET : AF_INET6
    let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
    guard written != nil else { return "?" }
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The contents of an ASN.1 string.
private func asn1Bytes(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> [UInt8] {
    guard let string, let data = ASN1_STRING_get0_data(string) else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
}
