/// How a mock server checks the DPoP proof of a request (RFC 9449 §4.3, §7.1): BearerTestSupport's
/// `MockDPoPRules`, with a verifier of its own. The demo checks none.
package protocol MockDPoPCheck: Sendable {
    /// The verdict on the `DPoP` field of a request of `method` to `targetURI` (scheme, authority and
    /// path, as the server sees itself addressed); `accessToken` for `ath`, `boundTo` the thumbprint
    /// the token is bound to (resource requests; nil for token requests).
    func check(
        _ field: String?,
        method: String,
        targetURI: String,
        accessToken: String?,
        boundTo thumbprint: String?
    ) -> MockDPoPVerdict
}

package enum MockDPoPVerdict: Sendable {
    /// `thumbprint`: the proof's key, which a token issued now is bound to; nil when the proof was
    /// accepted unchecked (a sampled check, or one made after the answer).
    case accepted(thumbprint: String?)
    /// The proof lacks the current nonce: answer `use_dpop_nonce` with it.
    case needsNonce(String)
    case refused(String)
}
