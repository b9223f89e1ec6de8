import BearerHTTP
import BearerIO

/// The names this proxy answers to: `localhost`, `127.0.0.1`, `[::1]` and the listen host, each with
/// a TCP listen port, and every `accept_hosts` entry (a bare entry matches any port, as in
/// `inject_hosts`).
///
/// One list for two questions: may an origin-form request with this `Host` proceed (the DNS
/// rebinding defence), and does an absolute-form request name the proxy itself (then it is handled
/// as origin-form, which is what clients send when `http_proxy` is set and the base URL is the proxy).
/// With named sessions, the port an absolute-form request names also says whose listener it names:
/// a client given `http_proxy` sends its request for a session's own base URL to the main listener.
package struct ProxyNames: Sendable {
    /// `host:port`, host lower-cased without IPv6 brackets.
    private let authorities: Set<String>
    /// The same as a Host field carries it (IPv6 bracketed), for a byte-wise first check.
    private let hostFieldValues: [[UInt8]]
    /// The same again, host and port apart, for hosts found in other places (absolute-form targets),
    /// with the session whose own listener has that port (nil: the main listener).
    private let encodedAuthorities: [(host: EncodedHost, port: Int, session: Int?)]
    private let acceptHosts: [HostPattern]
    private let acceptMatcher: HostMatcher

    /// What an absolute-form request's authority names of the proxy.
    enum Naming: Equatable {
        /// A listener: the main one (nil), or a named session's own (its index).
        case listener(session: Int?)
        /// An accept_hosts name, which names no listener in particular.
        case acceptedHost
    }

    /// `listenerSessions`: for each bound address, the index of the session whose own listener it
    /// is (nil: the main listener); none: all the main listener's.
    package init(boundAddresses: [SocketAddress], acceptHosts: [HostPattern], listenerSessions: [Int?] = []) {
        var authorities = Set<String>()
        var values: [[UInt8]] = []
        var encoded: [(host: EncodedHost, port: Int, session: Int?)] = []
        for (index, address) in boundAddresses.enumerated() {
            guard let port = address.port else { continue }
            let session = index < listenerSessions.count ? listenerSessions[index] : nil
            for host in Set(["localhost", "127.0.0.1", "::1", address.hostText ?? "127.0.0.1"]) {
                authorities.insert(Self.key(host: host, port: port))
                values.append(Array((host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)").utf8))
                encoded.append((EncodedHost(host), port, session))
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

    /// What a parsed authority of `head` names of the proxy (nil: nothing, it is another host);
    /// `defaultPort` when it names no port. Compares bytes: no string is built.
    func naming(_ authority: Authority, in head: RequestHead, defaultPort: Int) -> Naming? {
        let port = authority.port ?? defaultPort
        return head.bytes.withUnsafeBytes { raw in
            if let named = self.encodedAuthorities.first(where: {
                $0.port == port && $0.host.isSpelled(by: raw, authority.host)
            }) {
                return .listener(session: named.session)
            }
            return self.acceptMatcher.matches(raw, host: authority.host, port: port) ? .acceptedHost : nil
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
