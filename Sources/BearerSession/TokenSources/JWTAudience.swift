/// The `aud` claim of an access token that is a JWT (RFC 7519 §4.1.3; RFC 9068 §3: the resource it
/// is for), read without checking its signature: only to say why an API refused the token.
package enum JWTAudience {
    /// Its audiences (a string or a list of them); nil when the token is no JWT or has no `aud`.
    package static func audiences(of token: String) -> [String]? {
        let audience = JWTExpiry.claims(of: token)?["aud"]
        if let one = audience as? String { return [one] }
        return audience as? [String]
    }
}
