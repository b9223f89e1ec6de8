import BearerCore
import COpenSSL
import Synchronization

/// Makes a session's DPoP proofs (RFC 9449 §4): one JWT per request, signed with the session's key
/// (docs/token-sources.md, "Sender-constrained tokens: DPoP").
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
    /// The first 16 characters of every `jti`: 96 random bits drawn when the prover is made.
    private let tokenIDPrefix: [UInt8]

    package init(key: SigningKey, keyFile: String) {
        self.keyFile = keyFile
        self.thumbprint = Self.thumbprint(of: key)
        self.signer = JWSSigner(key: key, type: "dpop+jwt", embedsPublicKey: true)
        self.tokenIDPrefix = Base64URL.encode(randomBytes(12))
    }

    /// The RFC 7638 thumbprint of `key`'s public half: what `--check` shows of a key it read.
    package static func thumbprint(of key: SigningKey) -> String {
        Base64URL.encodedString(sha256(key.publicJWK.encoded))
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
        var proof = ByteBuffer()
        self.writeProof(
            method: method,
            targetURI: targetURI,
            accessTokenHash: accessTokenHash,
            nonce: nonce,
            now: now,
            to: &proof
        )
        return proof.readableBytesArray
    }

    /// `proof(…)` written at the end of `buffer`: on the data path, straight into the head.
    package func writeProof(
        method: some Collection<UInt8>,
        targetURI: some Collection<UInt8>,
        accessTokenHash: String?,
        nonce: String?,
        now: Double = wallClockSeconds(),
        to buffer: inout ByteBuffer
    ) {
        var claims = JSONObjectWriter(reservingCapacity: 256)
        let count = self.proofsMade.add(1, ordering: .relaxed).newValue
        self.withTokenID(count) { claims.add("jti", bytes: $0) }
        claims.add("htm", bytes: method)
        claims.add("htu", bytes: targetURI)
        claims.add("iat", Int64(now))
        if let accessTokenHash { claims.add("ath", accessTokenHash) }
        if let nonce { claims.add("nonce", nonce) }
        // Signing with a key OpenSSL loaded fails only when it cannot allocate.
        guard self.signer.write(claims, to: &buffer) else { preconditionFailure("OpenSSL could not sign a DPoP proof") }
    }

    /// The `jti` (RFC 9449 §4.2) of proof number `count`: the random prefix, then the count's 8
    /// bytes, 27 characters in all. Unique without a call into the random generator per proof
    /// (which cost a quarter as much again as the rest of the claims): within the process the count
    /// never repeats, and across processes and restarts the 96 random bits keep two provers' values
    /// apart with the negligible chance of a collision the RFC asks for.
    private func withTokenID(_ count: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 27) { tokenID in
            _ = tokenID.initialize(from: self.tokenIDPrefix)
            withUnsafeBytes(of: UInt64(truncatingIfNeeded: count).bigEndian) { counter in
                _ = Base64URL.encode(counter, to: UnsafeMutableRawPointer(tokenID.baseAddress! + 16))
            }
            body(tokenID)
        }
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
