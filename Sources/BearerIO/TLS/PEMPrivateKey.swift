import BearerCore
import COpenSSL
import Glibc

/// A private key held by OpenSSL (`EVP_PKEY*`, one reference owned), read from PEM or made: a TLS
/// client key, a key that signs JWTs, the local CA's and its leaves' keys.
///
/// Read without a passphrase prompt: an encrypted key is an error naming the file, never a question
/// on the terminal of a proxy that runs unattended. Freed with the last reference; OpenSSL clears an
/// EC key's private scalar as it frees it (`BN_clear_free`), which is how the CA's root key is
/// destroyed once it has signed the intermediate. Sendable: the key is never changed once read or
/// made, and OpenSSL signs with one key from several threads (each signature has its own context).
package final class PEMPrivateKey: @unchecked Sendable, CustomStringConvertible {
    package let pointer: OpaquePointer
    package let kind: Kind

    /// What kind of key it is, in the words `--check` shows.
    package enum Kind: Equatable, Sendable, CustomStringConvertible {
        case rsa(bits: Int)
        /// A named curve: `P-256`, `P-384`, `secp256k1`, …
        case ec(curve: String)
        /// Ed25519, DSA, RSA-PSS, …: OpenSSL's name for it.
        case other(String)

        package var description: String {
            switch self {
            case .rsa(let bits): "RSA \(bits)-bit"
            case .ec(let curve): "EC \(curve)"
            case .other(let name): name
            }
        }
    }

    /// Why a key file cannot be used, in one line that names the file and never shows a byte of it.
    package struct LoadError: Error, Equatable, Sendable, CustomStringConvertible {
        package var path: String
        package var reason: String

        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }

        package var description: String { "\(self.path): \(self.reason)" }
    }

    private init(taking pointer: OpaquePointer) {
        self.pointer = pointer
        self.kind = Self.kind(of: pointer)
    }

    deinit {
        EVP_PKEY_free(self.pointer)
    }

    /// Never the key: only what kind it is.
    package var description: String { "<private key: \(self.kind)>" }

    /// A new EC P-256 key (from OpenSSL's random generator).
    package static func generateP256() -> PEMPrivateKey? {
        cos_generate_p256_key().map(PEMPrivateKey.init(taking:))
    }

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Only the CA's intermediate
    /// key is ever written; the caller clears the bytes once they are on disk.
    package var pem: [UInt8] {
        writingToMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, self.pointer, nil, nil, 0, nil, nil) == 1 }
    }

    /// Reads the first private key of the PEM file at `path`.
    package static func load(file path: String) throws(LoadError) -> PEMPrivateKey {
        var bytes: [UInt8]
        do throws(IOError) {
            bytes = try readWholeFile(path)
        } catch {
            throw LoadError(path: path, reason: Self.unreadable(error))
        }
        defer { wipe(&bytes) }
        do throws(ParseError) {
            return try Self.parse(pem: bytes)
        } catch {
            throw LoadError(path: path, reason: error.reason)
        }
    }

    /// Why PEM text holds no usable private key.
    package struct ParseError: Error, Equatable, Sendable {
        package var reason: String
    }

    /// The first private key of PEM text (PKCS#8 `PRIVATE KEY`, or the traditional `RSA PRIVATE KEY`
    /// and `EC PRIVATE KEY`).
    package static func parse(pem: [UInt8]) throws(ParseError) -> PEMPrivateKey {
        let text = String(decoding: pem.prefix(64 * 1024), as: UTF8.self)
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw ParseError(
                reason:
                    "holds an encrypted key (a passphrase protects it); bearer-proxy reads keys unattended: decrypt"
                    + " a copy, kept mode 0600 (openssl pkey -in KEY -out KEY.pem)"
            )
        }
        ERR_clear_error()
        // No passphrase, ever: a callback that gives none (OpenSSL's default would prompt).
        let key = withMemoryBIO(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil) }
        ERR_clear_error()
        guard let key else {
            if text.contains("-----BEGIN CERTIFICATE-----") {
                throw ParseError(
                    reason: "holds a certificate but no private key (expected -----BEGIN PRIVATE KEY-----)"
                )
            }
            if text.contains("-----BEGIN PUBLIC KEY-----") || text.contains("-----BEGIN RSA PUBLIC KEY-----") {
                throw ParseError(reason: "holds a public key, not a private key")
            }
            if !text.contains("-----BEGIN ") {
                throw ParseError(reason: "is not a PEM file (expected -----BEGIN PRIVATE KEY-----)")
            }
            throw ParseError(reason: "holds no private key OpenSSL can read (expected -----BEGIN PRIVATE KEY-----)")
        }
        return PEMPrivateKey(taking: key)
    }

    private static func kind(of key: OpaquePointer) -> Kind {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            return .rsa(bits: Int(EVP_PKEY_get_bits(key)))
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return .ec(curve: "unknown") }
            let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .ec(curve: group == "prime256v1" ? "P-256" : group == "secp384r1" ? "P-384" : group)
        default:
            guard let name = EVP_PKEY_get0_type_name(key) else { return .other("an unknown key type") }
            return .other(String(cString: name))
        }
    }

    private static func unreadable(_ error: IOError) -> String {
        switch error.errnoCode {
        case ENOENT: "no such file"
        case EACCES: "cannot read it: permission denied"
        case EISDIR: "is a directory, not a key file"
        default: "cannot read it: \(error.reason)"
        }
    }
}

/// The whole of a small file (a key, a certificate, a service-account file): at most 1 MiB.
package func readWholeFile(_ path: String) throws(IOError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw IOError(errnoCode: errno, function: "open") }
    defer { Glibc.close(fd) }
    var status = stat()
    if fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR {
        throw IOError(errnoCode: EISDIR, function: "read")
    }
    var bytes: [UInt8]
    do throws(SystemCallError) {
        bytes = try SystemCall.readToEnd(fd, limit: 1 << 20, sizeHint: Int(status.st_size))
    } catch {
        throw IOError(error)
    }
    if bytes.count <= 1 << 20 { return bytes }
    wipe(&bytes)
    throw IOError(errnoCode: EFBIG, function: "read", detail: "larger than 1 MiB: not a key file")
}

/// Overwrites key bytes once they are parsed, so that a copy does not linger in freed memory.
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        if let base = raw.baseAddress { OPENSSL_cleanse(base, raw.count) }
    }
}
