import COpenSSL

/// A private key held by OpenSSL (`EVP_PKEY*`, one reference owned): the local CA's and the leaves'.
///
/// Freed with the last reference; OpenSSL clears an EC key's private scalar as it frees it
/// (`BN_clear_free`), which is how the root's key is destroyed once it has signed the intermediate.
/// Sendable: a key is never changed once made, and OpenSSL signs with one key from several threads.
final class PrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    private init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(self.pointer)
    }

    /// A new EC P-256 key (from OpenSSL's random generator).
    static func generateP256() -> PrivateKey? {
        cos_generate_p256_key().map(PrivateKey.init(taking:))
    }

    /// The first private key of PEM text; nil when there is none, or it is encrypted: without a
    /// password callback OpenSSL would ask for a pass phrase on the terminal, and a proxy must not.
    static func parse(pem: [UInt8]) -> PrivateKey? {
        withMemoryBIO(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) }
            .map(PrivateKey.init(taking:))
    }

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Only the intermediate's key
    /// is ever written; the caller clears the bytes once they are on disk.
    var pem: [UInt8] {
        writingToMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, self.pointer, nil, nil, 0, nil, nil) == 1 }
    }

    /// Whether this is an EC key on P-256 (the only kind the CA makes or loads).
    var isP256: Bool {
        var name = [CChar](repeating: 0, count: 32)
        var length = 0
        guard EVP_PKEY_get_group_name(self.pointer, &name, name.count, &length) == 1 else { return false }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256"
    }
}
