import BearerHTTP

/// `issuer`: the authorization server a session's endpoints are read from (RFC 8414), kept as
/// written, because its metadata's `issuer` must equal it character for character (RFC 8414 §3.3),
/// and parsed, because its well-known addresses are built from its host and path.
package struct Issuer: Equatable, Sendable, CustomStringConvertible {
    /// Exactly as the file has it: what the metadata's `issuer` is compared with.
    package var text: String
    package var url: HTTPURL

    package var description: String { self.text }

    /// `https://host[:port][/path]` (`http://` only on a loopback address), without query or fragment
    /// (RFC 8414 §2), or why not.
    package static func parse(_ text: String) -> Result<Issuer, URLParseError> {
        HTTPURL.parse(text).flatMap { url in
            guard url.isHTTPS || Configuration.isLoopback(url.host) else {
                return .failure(URLParseError("must be https:// (http:// only on a loopback address)"))
            }
            return .success(Issuer(text: text, url: url))
        }
    }
}

/// What discovery filled in a session, for `--check`: which keys, and the metadata document's address.
package struct DiscoveredKeys: Equatable, Sendable {
    /// The metadata URL the values came from.
    package var source: String
    /// The names of the keys it set (those the file left unset).
    package var keys: Set<String>
    /// Keys filled from elsewhere, each with where from (`--check`'s note after `#`): the issuer and
    /// resource from resource_url's metadata, the client_id a login registered.
    package var origins: [String: String]

    package init(source: String, keys: Set<String>, origins: [String: String] = [:]) {
        self.source = source
        self.keys = keys
        self.origins = origins
    }

    /// The `--check` note of `key`, nil when discovery did not set it.
    package func note(for key: String) -> String? {
        if let origin = self.origins[key] { return origin }
        return self.keys.contains(key) ? "discovered from \(self.source)" : nil
    }
}
