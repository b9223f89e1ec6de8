import BearerCore

/// An `inject_hosts` entry: which hosts get the token.
///
/// `host` matches that host on any port, `host:port` only that port, `*.domain` any subdomain of
/// `domain` (not `domain` itself) on any port. Matching ignores case.
package enum HostPattern: Equatable, Sendable, CustomStringConvertible {
    case host(String)
    case hostAndPort(String, Int)
    case subdomains(of: String)

    package static func parse(_ text: String) -> HostPattern? {
        let text = text.trimmingBlanks()
        if text.hasPrefix("*.") {
            let domain = text.dropFirst(2)
            guard !domain.isEmpty, let (host, port) = splitHostPort(domain), port == nil else { return nil }
            return .subdomains(of: host)
        }
        guard let (host, port) = splitHostPort(Substring(text)) else { return nil }
        if let port { return .hostAndPort(host, port) }
        return .host(host)
    }

    /// Whether a request to `host` (lower-cased, without brackets) on `port` matches.
    package func matches(host: String, port: Int) -> Bool {
        switch self {
        case .host(let expected): host == expected
        case .hostAndPort(let expected, let expectedPort): host == expected && port == expectedPort
        case .subdomains(let domain): host.hasSuffix("." + domain)
        }
    }

    package var description: String {
        switch self {
        case .host(let host): host.contains(":") ? "[\(host)]" : host
        case .hostAndPort(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .subdomains(let domain): "*.\(domain)"
        }
    }
}
