import COpenSSL
import Foundation

/// A public key a mock server checks signatures with, read from PEM (`-----BEGIN PUBLIC KEY-----`,
/// as `openssl pkey -pubout` writes it).
package final class MockPublicKey: @unchecked Sendable {
    let pointer: OpaquePointer

    package init?(pem: String) {
        let bytes = Array(pem.utf8)
        let key = bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else { return nil }
        self.pointer = key
    }

    /// A SubjectPublicKeyInfo in DER (a DPoP proof's `jwk`, encoded by the verifier).
    init?(der: [UInt8]) {
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { return nil }
        self.pointer = key
    }

    deinit {
        EVP_PKEY_free(self.pointer)
    }

    /// `RS256` for RSA, `ES256` for EC: the only algorithm a key of its kind may sign with here.
    var algorithm: String { EVP_PKEY_get_base_id(self.pointer) == EVP_PKEY_RSA ? "RS256" : "ES256" }
}

/// A JWT as a mock authorization server read it: header and claims, after its signature was checked.
package struct MockJWT: Sendable {
    package var compact: String
    package var header: [String: String]
    package var stringClaims: [String: String]
    package var numberClaims: [String: Int64]
    /// Every claim's name.
    package var claimNames: Set<String>
}

/// Checks JWTs the way an authorization server does (RFC 7515 §5.2, RFC 7523 §3), with OpenSSL's
/// `EVP_DigestVerify`: a verifier that shares nothing with the proxy's signer. An ES256 signature
/// must be the 64-byte r ‖ s of RFC 7518 §3.4; it is turned into DER here for OpenSSL.
package enum MockJWTVerifier {
    /// The verified token, or why it was refused (an OAuth2 error description).
    package static func verify(_ compact: String, with key: MockPublicKey) -> Result<MockJWT, MockJWTError> {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = base64URLDecode(parts[0]), let claimsData = base64URLDecode(parts[1]),
            let signature = base64URLDecode(parts[2])
        else { return .failure(MockJWTError("not a compact JWS")) }
        guard let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { return .failure(MockJWTError("header or claims are not JSON objects")) }
        guard header["alg"] as? String == key.algorithm else {
            return .failure(MockJWTError("alg \(header["alg"] ?? "none") does not match the registered key"))
        }
        let signingInput = Array(compact.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard Self.verifySignature(Array(signature), over: signingInput, key: key) else {
            return .failure(MockJWTError("Invalid JWT Signature."))
        }
        var numbers: [String: Int64] = [:]
        var strings: [String: String] = [:]
        for (name, value) in claims {
            if let text = value as? String {
                strings[name] = text
            } else if !(value is Bool), let number = value as? NSNumber {
                numbers[name] = number.int64Value
            }
        }
        return .success(
            MockJWT(
                compact: compact,
                header: header.compactMapValues { $0 as? String },
                stringClaims: strings,
                numberClaims: numbers,
                claimNames: Set(claims.keys)
            )
        )
    }

    private static func verifySignature(_ signature: [UInt8], over input: [UInt8], key: MockPublicKey) -> Bool {
        var signature = signature
        if key.algorithm == "ES256" {
            guard signature.count == 64, let der = Self.derECDSASignature(rawRS: signature) else { return false }
            signature = der
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        defer { ERR_clear_error() }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, input, input.count) == 1
    }

    /// `SEQUENCE { INTEGER r, INTEGER s }` from r ‖ s, built with OpenSSL's own encoder.
    private static func derECDSASignature(rawRS: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = rawRS.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = rawRS.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    package static func base64URLDecode(_ text: Substring) -> Data? {
        guard !text.contains("="), !text.contains("+"), !text.contains("/") else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// Why a mock server refused a JWT: its words go in `error_description`.
package struct MockJWTError: Error, Equatable, Sendable {
    package var description: String
    init(_ description: String) { self.description = description }
}
