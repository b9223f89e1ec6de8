import BearerCore
import COpenSSL
import Synchronization

/// Makes a session's DPoP proofs (RFC 9449 §4): one JWT per request, signed with the session's key
/// (README, "Sender-constrained tokens: DPoP").
///
/// The header (`typ` `dpop+jwt`, ES256, the public key as `jwk`) is encoded once, in the signer; each
/// proof costs its claims' bytes, one signature and the base64url around it. A proof is never reused:
/// each has its own `jti`, and `htu`, `ath` and `nonce` change from request to request. Shared by
/// every loop of the process; the nonces it remembers and the counts it keeps are its only state.
package final class DPoPProver: Sendable {
    package let keyFile: String
    /// The key's RFC 7638 thumbprint (`jkt`): public, what `--check` and `/status` show.
    package let thumbprint: String
    /// The newest `DPoP-Nonce` each origin sent (RFC 9449 §8, §9).
    package let nonces = DPoPNonceStore()
    /// Proofs made, and requests sent again because a server asked for a new nonce (`/metrics`).
    package let proofsMade = Atomic<Int>(0)
    package let nonceRetries = Atomic<Int>(0)
    private let signer: JWSSigner
    /// The `ath` of the token line last asked about: a token's line is made once per generation and
    /// shared, so the hash is computed once per token, not per request.
    private let lastHash = Locked<(line: [UInt8], hash: String)?>(nil)

    package init(key: SigningKey, keyFile: String) {
        self.keyFile = keyFile
        self.thumbprint = Base64URL.encodedString(sha256(key.publicJWK.encoded))
        self.signer = JWSSigner(key: key, type: "dpop+jwt", embedsPublicKey: true)
    }

    /// A proof for `method` to `targetURI` (scheme, authority and path, without query or fragment:
    /// the caller cuts them), with `ath` when it goes with an access token (`accessTokenHash`, see
    /// `accessTokenHash(of:)`) and the origin's nonce when there is one. `now`: seconds since 1970.
    package func proof(
        method: some Collection<UInt8>,
        targetURI: some Collection<UInt8>,
        accessTokenHash: String?,
        nonce: String?,
        now: Double = wallClockSeconds()
    ) -> [UInt8] {
        var claims = JSONObjectWriter()
        claims.add("jti", JWSSigner.newTokenID())
        claims.add("htm", bytes: method)
        claims.add("htu", bytes: targetURI)
        claims.add("iat", Int64(now))
        if let accessTokenHash { claims.add("ath", accessTokenHash) }
        if let nonce { claims.add("nonce", nonce) }
        // Signing with a key OpenSSL loaded fails only when it cannot allocate.
        guard let proof = self.signer.sign(claims) else { preconditionFailure("OpenSSL could not sign a DPoP proof") }
        self.proofsMade.add(1, ordering: .relaxed)
        return proof
    }

    /// The `ath` of the token in a DPoP `Authorization` line (`DPoPLine`).
    func accessTokenHash(ofLine line: [UInt8]) -> String {
        if let last = self.lastHash.withLock({ $0 }), last.line == line { return last.hash }
        let hash = Self.accessTokenHash(of: DPoPLine.token(of: line))
        self.lastHash.withLock { $0 = (line, hash) }
        return hash
    }

    /// `ath` (RFC 9449 §4.2): base64url of the SHA-256 of the access token's ASCII bytes.
    package static func accessTokenHash(of token: some Collection<UInt8>) -> String {
        Base64URL.encodedString(sha256(Array(token)))
    }

    /// The htu of a request to `url`: its scheme, authority and path; the query and fragment are cut
    /// (RFC 9449 §4.2: "without query and fragment parts").
    package static func targetURI(_ url: some StringProtocol) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }
}
