import BearerHTTP
import BearerIO

/// The names this proxy answers to: `localhost`, `127.0.0.1`, `[::1]` and the listen host, each with
/// a TCP listen port, and every `accept_hosts` entry (a bare entry matches any port, as in
/// `inject_hosts`).
///
/// One list for two questions: may an origin-form request with this `Host` proceed (the DNS
/// rebinding defence), and does an absolute-form request name the proxy itself (then it is handled
/// as origin-form, which is what clients send when `http_proxy` is set and the base URL is the proxy).
package struct ProxyNames: Sendable {
    /// `host:port`, host lower-cased without IPv6 brackets.
    private let authorities: Set<String>
    /// The same as a Host field carries it (IPv6 bracketed), for a byte-wise first check.
    private let hostFieldValues: [[UInt8]]
    /// The same again, host and port apart, for hosts found in other places (absolute-form targets).
    private let encodedAuthorities: [(host: EncodedHost, port: Int)]
    private let acceptHosts: [HostPattern]
    private let acceptMatcher: HostMatcher

    package init(boundAddresses: [SocketAddress], acceptHosts: [HostPattern]) {
        var authorities = Set<String>()
        var values: [[UInt8]] = []
        var encoded: [(host: EncodedHost, port: Int)] = []
        for address in boundAddresses {
            guard let port = address.port else { continue }
            for host in Set(["localhost", "127.0.0.1", "::1", address.hostText ?? "127.0.0.1"]) {
                authorities.insert(Self.key(host: host, port: port))
                values.append(Array((host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)").utf8))
                encoded.append((EncodedHost(host), port))
            }
        }
        self.authorities = authorities
        self.hostFieldValues = values
        self.encodedAuthorities = encoded
        self.acceptHosts = acceptHosts
        self.acceptMatcher = HostMatcher(acceptHosts)
    }

    private static func key(host: String, port: Int) -> String { "\(host):\(port)" }

    /// Whether `host` (lower-cased, without brackets) on `port` is one of the proxy's names.
    package func contains(host: String, port: Int) -> Bool {
        self.authorities.contains(Self.key(host: host, port: port))
            || self.acceptHosts.contains { $0.matches(host: host, port: port) }
    }

    /// Whether a parsed authority of `head` names the proxy; `defaultPort` when it names none.
    /// Compares bytes: no string is built.
    func contains(_ authority: Authority, in head: RequestHead, defaultPort: Int) -> Bool {
        let port = authority.port ?? defaultPort
        return head.bytes.withUnsafeBytes { raw in
            self.encodedAuthorities.contains { $0.port == port && $0.host.isSpelled(by: raw, authority.host) }
                || self.acceptMatcher.matches(raw, host: authority.host, port: port)
        }
    }

    /// Whether the Host field value (`head.bytes[value]`) is exactly one of the proxy's own
    /// `host:port` names, compared as bytes: the common case (curl's Host), with no string built.
    func matchesExactly(_ value: Range<Int>, in head: RequestHead) -> Bool {
        head.bytes.withUnsafeBytes { raw in
            self.hostFieldValues.contains { candidate in
                candidate.count == value.count
                    && zip(candidate, value).allSatisfy { expected, index in raw[index] | 0x20 == expected | 0x20 }
            }
        }
    }

    /// Lower-cased, brackets of an IPv6 literal removed.
    static func normalizedHost(_ text: String) -> String {
        let lower = text.lowercased()
        return lower.hasPrefix("[") ? String(lower.dropFirst().dropLast()) : lower
    }
}
