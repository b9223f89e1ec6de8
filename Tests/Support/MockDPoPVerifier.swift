import COpenSSL
import Foundation

/// A DPoP proof (RFC 9449 §4) as a mock server read it, after its signature was checked with the key
/// in its own header.
package struct MockDPoPProof: Sendable {
    package var jwt: MockJWT
    /// The RFC 7638 thumbprint of the header's `jwk`: what a token bound to the key names as `cnf.jkt`.
    package var thumbprint: String
    /// The header's `jwk` members.
    package var jwk: [String: String]

    package var jti: String? { self.jwt.stringClaims["jti"] }
    package var htm: String? { self.jwt.stringClaims["htm"] }
    package var htu: String? { self.jwt.stringClaims["htu"] }
    package var ath: String? { self.jwt.stringClaims["ath"] }
    package var nonce: String? { self.jwt.stringClaims["nonce"] }
    package var iat: Int64? { self.jwt.numberClaims["iat"] }
}

/// Checks DPoP proofs the way an authorization or resource server does (RFC 9449 §4.3): one JWT, `typ`
/// `dpop+jwt`, an asymmetric `alg`, a public `jwk` (no private member) whose key verifies the
/// signature — with OpenSSL's `EVP_DigestVerify` through `MockJWTVerifier`, sharing nothing with the
/// proxy's signer. The claims are the caller's to check against its request.
package enum MockDPoPVerifier {
    package static func verify(_ proof: String) -> Result<MockDPoPProof, MockJWTError> {
        guard let headerPart = proof.split(separator: ".", omittingEmptySubsequences: false).first,
            let headerData = MockJWTVerifier.base64URLDecode(headerPart),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any]
        else { return .failure(MockJWTError("the DPoP proof is not a JWS")) }
        guard header["typ"] as? String == "dpop+jwt" else { return .failure(MockJWTError("typ is not dpop+jwt")) }
        guard header["alg"] as? String == "ES256" else { return .failure(MockJWTError("alg is not ES256")) }
        guard let jwk = header["jwk"] as? [String: Any], jwk["kty"] as? String == "EC",
            jwk["crv"] as? String == "P-256", let x = jwk["x"] as? String, let y = jwk["y"] as? String
        else { return .failure(MockJWTError("jwk is not an EC P-256 public key")) }
        guard jwk["d"] == nil else { return .failure(MockJWTError("jwk holds the private key")) }
        guard let key = Self.publicKey(x: x, y: y) else { return .failure(MockJWTError("jwk is not a point on P-256")) }
        switch MockJWTVerifier.verify(proof, with: key) {
        case .failure(let error):
            return .failure(error)
        case .success(let jwt):
            return .success(
                MockDPoPProof(
                    jwt: jwt,
                    thumbprint: Self.thumbprint(x: x, y: y),
                    jwk: jwk.compactMapValues { $0 as? String }
                )
            )
        }
    }

    /// RFC 7638 §3: base64url(SHA-256) of the required members in lexicographic order, no whitespace.
    package static func thumbprint(x: String, y: String) -> String {
        base64URL(sha256(Array(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
    }

    /// `ath` (RFC 9449 §4.2) of an access token.
    package static func accessTokenHash(_ token: String) -> String {
        base64URL(sha256(Array(token.utf8)))
    }

    /// The P-256 public key (x, y) as SubjectPublicKeyInfo DER, read by OpenSSL.
    static func publicKey(x: String, y: String) -> MockPublicKey? {
        guard let x = MockJWTVerifier.base64URLDecode(Substring(x)), x.count == 32,
            let y = MockJWTVerifier.base64URLDecode(Substring(y)), y.count == 32
        else { return nil }
        // SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING 04 ‖ x ‖ y } (RFC 5480 §2).
        let prefix: [UInt8] = [
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
            0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
        ]
        return MockPublicKey(der: prefix + Array(x) + Array(y))
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = SHA256(bytes, bytes.count, &digest)
        return digest
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
