import BearerCrypto

/// Proof Key for Code Exchange (RFC 7636) with the S256 method, and the `state` of the request.
///
/// The verifier stays in this process; only its SHA-256 goes to the browser. A code intercepted on
/// its way to the loopback listener (another local app listening, a logged URL) is useless without
/// the verifier, which only the token request carries.
struct PKCE: Sendable {
    /// 32 random bytes, base64url: 43 characters from the unreserved set (§4.1).
    let verifier: String
    /// BASE64URL(SHA256(ASCII(verifier))) (§4.2).
    let challenge: String
    /// Ties the callback to this login: a callback with another state is refused (RFC 6749 §10.12).
    let state: String

    init() {
        self.init(verifier: Base64URL.encodedString(randomBytes(32)), state: Base64URL.encodedString(randomBytes(16)))
    }

    init(verifier: String, state: String) {
        self.verifier = verifier
        self.challenge = Self.challenge(for: verifier)
        self.state = state
    }

    static func challenge(for verifier: String) -> String {
        Base64URL.encodedString(sha256(Array(verifier.utf8)))
    }
}
