import BearerConfig

/// Why an issuer's metadata gave no endpoints: one line naming the issuer and what happened.
package struct DiscoveryError: Error, Equatable, Sendable, CustomStringConvertible {
    package var description: String

    /// No well-known address answered with a document: each URL and what it answered.
    static func noMetadata(_ what: String, at place: String, tried: [(url: String, outcome: String)]) -> Self {
        let attempts = tried.map { "\($0.url) (\($0.outcome))" }.joined(separator: " nor at ")
        return Self(description: "\(place): no \(what) at \(attempts)")
    }

    /// The document names another issuer (RFC 8414 §3.3): both values, so that a typo shows.
    static func issuerMismatch(_ issuer: Issuer, named: String?, source: String, at place: String) -> Self {
        let other = named.map { "'\($0)'" } ?? "no issuer"
        return Self(
            description:
                "\(place): the metadata at \(source) names \(other), not the configured '\(issuer.text)' (they must be equal, RFC 8414 §3.3)"
        )
    }

    static func unusable(_ reason: String, source: String, at place: String) -> Self {
        Self(description: "\(place): the metadata at \(source) cannot be used: \(reason)")
    }

    /// The server does not offer what the session needs and the file did not choose.
    static func unsupported(_ reason: String, at place: String) -> Self {
        Self(description: "\(place): \(reason)")
    }
}
