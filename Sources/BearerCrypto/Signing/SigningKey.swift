import BearerIO
import COpenSSL

/// The JWS algorithms the proxy signs with (RFC 7518 §3.1): one per kind of key it accepts.
package enum JWSAlgorithm: String, Equatable, Sendable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (§3.3), for RSA keys of 2048 bits or more.
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256 (§3.4); the signature is r ‖ s, 32 bytes each.
    case es256 = "ES256"
}

/// A private key that signs JWS (RFC 7515): RSA → RS256, EC P-256 → ES256. Loaded once, at start;
/// each signature makes its own OpenSSL context, so one key signs on every thread at once.
package final class SigningKey: Sendable, CustomStringConvertible {
    let key: PEMPrivateKey
    package let algorithm: JWSAlgorithm
    /// ES256: the key's EC_KEY, which signs without an EVP context per signature.
    let ecdsa: ECDSAKey?

    /// Why a readable key cannot sign JWTs.
    package struct UnsupportedKey: Error, Equatable, Sendable {
        package var reason: String
    }

    package init(_ key: PEMPrivateKey) throws(UnsupportedKey) {
        switch key.kind {
        case .rsa(let bits) where bits >= 2048:
            self.algorithm = .rs256
        case .rsa(let bits):
            // RFC 7518 §3.3: "A key of size 2048 bits or larger MUST be used".
            throw UnsupportedKey(reason: "holds an RSA key of \(bits) bits: too short for RS256 (2048 bits or more)")
        case .ec(curve: "P-256"):
            self.algorithm = .es256
        case .ec, .other:
            throw UnsupportedKey(
                reason: "holds an \(key.kind) key; JWTs are signed with RSA (RS256) or EC P-256 (ES256) keys"
            )
        }
        self.key = key
        self.ecdsa = self.algorithm == .es256 ? ECDSAKey(key) : nil
    }

    /// Reads and checks the PEM key at `path`: one line naming the file when it cannot be used.
    package static func load(file path: String) throws(PEMPrivateKey.LoadError) -> SigningKey {
        let key = try PEMPrivateKey.load(file: path)
        do throws(UnsupportedKey) {
            return try SigningKey(key)
        } catch {
            throw PEMPrivateKey.LoadError(path: path, reason: error.reason)
        }
    }

    /// `EC P-256, ES256`: what `--check` shows. Never the key.
    package var description: String { "\(self.key.kind), \(self.algorithm.rawValue)" }

    /// The JWS signature of `message` (RFC 7515 §5.1): PKCS#1 v1.5 for RS256; for ES256 the raw
    /// 64-byte r ‖ s of RFC 7518 §3.4, not the DER `ECDSA-Sig-Value` OpenSSL produces. Nil only if
    /// OpenSSL fails.
    func sign(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
        // ES256 without an EVP context per signature; the EVP path stays for a key OpenSSL cannot
        // hand out as an EC_KEY.
        if let ecdsa = self.ecdsa { return ecdsa.sign(message) }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, self.key.pointer) == 1 else {
            ERR_clear_error()
            return nil
        }
        var length = Int(EVP_PKEY_get_size(self.key.pointer))
        var signature = [UInt8](repeating: 0, count: length)
        let signed = EVP_DigestSign(
            context,
            &signature,
            &length,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self),
            message.count
        )
        guard signed == 1 else {
            ERR_clear_error()
            return nil
        }
        signature.removeLast(signature.count - length)
        switch self.algorithm {
        case .rs256: return signature
        case .es256: return Self.rawECDSASignature(fromDER: signature)
        }
    }

    /// r ‖ s, each left-padded to 32 bytes, from DER `SEQUENCE { INTEGER r, INTEGER s }`.
    private static func rawECDSASignature(fromDER der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(signature) }
            return ECDSAKey.raw(signature)
        }
    }
}
