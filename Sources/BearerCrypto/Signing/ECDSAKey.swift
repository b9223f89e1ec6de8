import BearerCore
import BearerIO
import COpenSSL

/// The EC P-256 key under an ES256 `SigningKey`, signing with OpenSSL's ECDSA functions directly:
/// no EVP context made, initialised and freed per signature, which on OpenSSL 3 cost more than a
/// third of a signature again (a DPoP proof per request makes that the data path's cost). Precomputed
/// (k⁻¹, r) pairs (`ECDSA_sign_setup`) were tried and measured no better on a shared 2-core machine:
/// the setup is most of a signature, so making it on another thread moves the CPU, not saves it.
///
/// Sendable: the key is never changed once made; OpenSSL signs with one `EC_KEY` on several threads.
final class ECDSAKey: @unchecked Sendable {
    /// `EC_KEY*`, one reference owned.
    let pointer: OpaquePointer

    init?(_ key: PEMPrivateKey) {
        guard let pointer = cos_pkey_get1_ec_key(key.pointer) else {
            ERR_clear_error()
            return nil
        }
        self.pointer = pointer
    }

    deinit {
        cos_ec_key_free(self.pointer)
    }

    /// The raw 64-byte r ‖ s (RFC 7518 §3.4) of `message`'s SHA-256. Nil only if OpenSSL fails.
    func sign(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
        let signature = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digest in
            sha256(message, into: digest.baseAddress!)
            return cos_ecdsa_do_sign(digest.baseAddress, 32, self.pointer)
        }
        guard let signature else {
            ERR_clear_error()
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        return Self.raw(signature)
    }

    /// r ‖ s of an `ECDSA_SIG`, each left-padded to 32 bytes.
    static func raw(_ signature: OpaquePointer) -> [UInt8]? {
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var written = false
        let raw = [UInt8](unsafeUninitializedCapacity: 64) { out, count in
            written = BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            count = 64
        }
        return written ? raw : nil
    }
}
