/// An `http://` or `https://` URL of the config: host, port, and an optional path prefix.
///
/// The type of every URL key (upstream, token_url, revocation_url, the login and device URLs, …),
/// so that each is parsed, checked and printed by one grammar.
package struct HTTPURL: Equatable, Sendable, CustomStringConvertible {
    package var isHTTPS: Bool
    /// Lower-cased host as written, without brackets for IPv6.
    package var host: String
    package var port: Int
    /// Prepended to origin-form paths; empty or starting with `/`, never ending with `/`.
    package var pathPrefix: String

    package var defaultPort: Int { self.isHTTPS ? 443 : 80 }

    /// What goes in `Host`: the host, bracketed if IPv6, with the port unless it is the scheme's default.
    package var authority: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return self.port == self.defaultPort ? host : "\(host):\(self.port)"
    }

    package var description: String {
        "\(self.isHTTPS ? "https" : "http")://\(self.authority)\(self.pathPrefix)"
    }

    /// Where connections for this URL go.
    package var origin: Origin { Origin(isHTTPS: self.isHTTPS, host: self.host, port: self.port) }

    /// `text` as an error may quote it: everything up to an `@` (user info) and from a `?` or `#` on
    /// (query, fragment) become `…`. Either may hold a password or an API key, and an error reaches the
    /// terminal and the journal. A `?` or `#` before the last `@` is a password holding one or a query
    /// holding an `@`, which cannot be told apart: then only the scheme is shown.
    package static func quotable(_ text: String) -> String {
        let startsQuery: (Character) -> Bool = { $0 == "?" || $0 == "#" }
        let afterScheme = text.firstRange(of: "://")?.upperBound ?? text.startIndex
        var shown = String(text[..<afterScheme])
        var rest = text[afterScheme...]
        if let at = rest.lastIndex(of: "@") {
            if let query = rest.firstIndex(where: startsQuery), query < at { return shown + "…" }
            shown += "…"
            rest = rest[at...]
        }
        if let query = rest.firstIndex(where: startsQuery) { return shown + rest[..<query] + "\(rest[query])…" }
        return shown + rest
    }

    /// Parses `http[s]://host[:port][/prefix]`; returns a sentence saying what is wrong otherwise.
    package static func parse(_ text: String) -> Result<HTTPURL, URLParseError> {
        let lower = text.lowercased()
        let isHTTPS: Bool
        let rest: Substring
        if lower.hasPrefix("http://") {
            isHTTPS = false
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            isHTTPS = true
            rest = text.dropFirst(8)
        } else {
            return .failure(.init("must start with http:// or https://"))
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if path.contains("?") || path.contains("#") {
            return .failure(.init("must not have a query or fragment"))
        }
        if authority.contains("@") {
            return .failure(.init("must not contain user info (put credentials in the token settings)"))
        }
        guard let (host, port) = splitHostPort(authority) else {
            return .failure(.init("has an invalid host or port"))
        }
        while path.hasSuffix("/") { path.removeLast() }
        if path.contains(where: { $0 == " " || $0.asciiValue.map { $0 < 0x21 || $0 == 0x7F } ?? false }) {
            return .failure(.init("has an invalid path"))
        }
        return .success(HTTPURL(isHTTPS: isHTTPS, host: host, port: port ?? (isHTTPS ? 443 : 80), pathPrefix: path))
    }
}

package struct URLParseError: Error, Equatable, Sendable {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
}

/// Splits `host[:port]` or `[v6][:port]`; the host comes back lower-cased without brackets.
package func splitHostPort(_ authority: Substring) -> (host: String, port: Int?)? {
    var host: Substring
    var portText: Substring?
    if authority.hasPrefix("[") {
        guard let close = authority.firstIndex(of: "]") else { return nil }
        host = authority[authority.index(after: authority.startIndex)..<close]
        let after = authority[authority.index(after: close)...]
        if !after.isEmpty {
            guard after.hasPrefix(":") else { return nil }
            portText = after.dropFirst()
        }
        guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
    } else {
        if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        guard host.allSatisfy({ allowed.contains($0) }) else { return nil }
    }
    guard !host.isEmpty else { return nil }
    var port: Int?
    if let portText {
        guard let value = Int(portText), (1...65535).contains(value) else { return nil }
        port = value
    }
    return (host.lowercased(), port)
}
