import BearerCrypto
import BearerIO
import BearerSession

/// What an upstream says when it refuses a token: `WWW-Authenticate` values (each line one field
/// value; RFC 9728's `resource_metadata` is read from them) and a `DPoP-Nonce`, which the next
/// proof carries as its `nonce` claim. The nonce must come back out of the signed proof exactly
/// as it went in: a value that could break out of its JSON string would let a server write claims
/// into the proxy's proofs.
enum AuthenticateFuzz {
    /// A key for the fuzzer only (P-256, made for this file; it signs nothing anyone verifies).
    static let prover: DPoPProver = {
        let pem = """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmkrMtBAYJ6NpFcS/
            J9vy2z51ll/MeIdlcmIrUfjb+RqhRANCAAS6m8J+HHzccG1YQRolQ5MbJnkknu/r
            8OGbxzB9BOWJJVuhyzkoGOfEQyR6ETl1VbziTCIfLDvi7w391fFp9Rbb
            -----END PRIVATE KEY-----
            """
        let key = try! SigningKey(PEMPrivateKey.parse(pem: Array(pem.utf8)))
        return DPoPProver(key: key, keyFile: "fuzz")
    }()

    static func run(_ input: [UInt8]) {
        let values = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        _ = AuthenticateChallenge.resourceMetadata(in: values.map { String(decoding: $0, as: UTF8.self) })

        let nonce = String(decoding: values.first ?? [], as: UTF8.self)
        let proof = Self.prover.proof(
            method: Array("GET".utf8),
            targetURI: Array("https://api.example.com/v1".utf8),
            accessTokenHash: nil,
            nonce: nonce
        )
        let claims = JWTExpiry.claims(of: String(decoding: proof, as: UTF8.self))
        precondition(claims?["nonce"] as? String == nonce, "the proof's nonce is not the DPoP-Nonce it was given")
    }
}
