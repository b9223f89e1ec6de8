import BearerConfig
import BearerCore
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
/// - On the admin listener (`acceptsOwnOrigin`), an `Origin` naming the listener itself (`http://`
///   and a host:port it answers to) is its own page's, which POSTs refresh and logout.
///
/// A class, as `Router` is: checked from the machine's rules, the struct was copied for every request
/// (four retains and two bridge retains, and their releases).
package final class RequestGuard: Sendable {
    private let names: ProxyNames
    private let acceptOrigins: Set<String>
    private let acceptsOwnOrigin: Bool

    package init(configuration: Configuration, names: ProxyNames, acceptsOwnOrigin: Bool = false) {
        self.names = names
        self.acceptOrigins = Set(configuration.acceptOrigins)
        self.acceptsOwnOrigin = acceptsOwnOrigin
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
        if self.names.matchesExactly(value, in: head) { return nil }
        if self.names.naming(authority, in: head, defaultPort: 80) != nil { return nil }
        return .hostRefused(head.string(value))
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
            if self.acceptOrigins.contains(origin) || self.isOwn(origin) { return nil }
            return .originRefused(oneLine(origin, limit: 100))
        }
        if let fetchSite, fetchSite == "cross-site" || fetchSite == "same-site" {
            return .originRefused("Sec-Fetch-Site: \(fetchSite)")
        }
        return nil
    }

    /// Whether `origin` (lower-cased) is `http://` and one of this listener's own names: a page the
    /// listener served. A rebinding page's Origin carries its own host name, so it is not.
    private func isOwn(_ origin: String) -> Bool {
        guard self.acceptsOwnOrigin, origin.hasPrefix("http://") else { return false }
        let authority = origin.dropFirst("http://".count)
        guard let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]"),
            let port = Int(authority[authority.index(after: colon)...])
        else { return false }
        return self.names.contains(host: ProxyNames.normalizedHost(String(authority[..<colon])), port: port)
    }
}
