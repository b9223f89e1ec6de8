import BearerHTTP
import BearerIO

/// Refuses requests a web page could have made the browser send: a local proxy that adds a token is
/// a confused deputy for any site the user visits, and DNS rebinding lets a site's own host name
/// point at 127.0.0.1.
///
/// - Origin-form requests on TCP listeners must carry a `Host` the proxy answers to: localhost,
///   127.0.0.1 or [::1] with a listen port, or an `accept_hosts` entry (a rebinding page's requests
///   carry its own host name). A unix socket is out of any browser's reach and accepts any Host; an
///   HTTP/1.0 request without Host is no browser's either.
/// - Any request with browser fetch metadata from another site is refused: an `Origin` not in
///   `accept_origins`, or `Sec-Fetch-Site: cross-site/same-site` without an allowed Origin. curl,
///   scripts and SDKs send neither.
package struct RequestGuard: Sendable {
    /// `host:port` (lower-case, IPv6 bracketed) of the proxy's own names.
    private let ownAuthorities: Set<String>
    /// The same, as bytes, for the fast path: a Host that names the proxy exactly as curl sends it.
    private let ownAuthorityBytes: [[UInt8]]
    private let acceptHosts: [HostPattern]
    private let acceptOrigins: Set<String>

    package init(configuration: Configuration, boundAddresses: [SocketAddress]) {
        var authorities = Set<String>()
        for address in boundAddresses {
            guard let port = address.port else { continue }
            for host in ["localhost", "127.0.0.1", "[::1]"] { authorities.insert("\(host):\(port)") }
            if let text = address.hostText {
                authorities.insert(text.contains(":") ? "[\(text)]:\(port)" : "\(text):\(port)")
            }
        }
        self.ownAuthorities = authorities
        self.ownAuthorityBytes = authorities.map { Array($0.utf8) }
        self.acceptHosts = configuration.acceptHosts
        self.acceptOrigins = Set(configuration.acceptOrigins)
    }

    /// Nil when the request may proceed, else the refusal.
    package func check(_ head: RequestHead, fromUnixSocket: Bool) -> ProxyError? {
        if let refusal = self.checkFetchMetadata(head) { return refusal }
        guard !fromUnixSocket else { return nil }
        switch head.targetForm {
        case .origin, .asterisk:
            return self.checkHost(head)
        case .absolute, .authority:
            return nil
        }
    }

    private func checkHost(_ head: RequestHead) -> ProxyError? {
        // HTTP/1.0 tools may send no Host at all; every browser sends one.
        guard let hostField = head.hostField else { return nil }
        guard let authority = head.hostAuthority else { return .hostRefused("") }
        let value = head.fields[hostField].value
        let matchesOwnName = head.bytes.withUnsafeBytes { raw in
            self.ownAuthorityBytes.contains { candidate in
                candidate.count == value.count
                    && zip(candidate, value).allSatisfy { expected, index in raw[index] | 0x20 == expected | 0x20 }
            }
        }
        if matchesOwnName { return nil }
        var host = head.string(authority.host).lowercased()
        let port = authority.port ?? 80
        if self.ownAuthorities.contains("\(host):\(port)") { return nil }
        if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
        if self.acceptHosts.contains(where: { $0.matches(host: host, port: port) }) { return nil }
        return .hostRefused(head.string(head.fields[head.hostField!].value))
    }

    private func checkFetchMetadata(_ head: RequestHead) -> ProxyError? {
        var origin: String?
        var fetchSite: String?
        for field in head.fields {
            switch field.knownName {
            case .origin: origin = head.string(field.value).lowercased()
            case .secFetchSite: fetchSite = head.string(field.value).lowercased()
            default: continue
            }
        }
        if let origin {
            return self.acceptOrigins.contains(origin) ? nil : .originRefused(oneLine(origin, limit: 100))
        }
        if let fetchSite, fetchSite == "cross-site" || fetchSite == "same-site" {
            return .originRefused("Sec-Fetch-Site: \(fetchSite)")
        }
        return nil
    }
}
