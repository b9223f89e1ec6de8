import COpenSSL
import Glibc

/// A TLS client certificate, its chain and its key (RFC 8705 mutual TLS): what the proxy presents
/// when a server asks who it is.
///
/// Read once at start from PEM files: the certificate file holds the leaf first, then any
/// intermediates; the key must belong to the leaf. Sendable: nothing changes once read.
package final class TLSClientCertificate: @unchecked Sendable {
    /// `X509*`, one reference each: the leaf, then the intermediates in file order.
    let chain: [OpaquePointer]
    package let key: PEMPrivateKey
    package let certificateFile: String
    package let keyFile: String

    private init(chain: [OpaquePointer], key: PEMPrivateKey, certificateFile: String, keyFile: String) {
        self.chain = chain
        self.key = key
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }

    deinit {
        for certificate in self.chain { X509_free(certificate) }
    }

    /// Why the certificate or its key cannot be used: one line naming the file.
    package struct LoadError: Error, Equatable, Sendable, CustomStringConvertible {
        /// Which of the two files is at fault: the certificate's (false) or the key's (true).
        package var isAboutKey: Bool
        package var description: String
    }

    /// Reads the certificate chain and the key, and checks that the key belongs to the leaf.
    package static func load(certificateFile: String, keyFile: String) throws(LoadError) -> TLSClientCertificate {
        let key: PEMPrivateKey
        do throws(PEMPrivateKey.LoadError) {
            key = try PEMPrivateKey.load(file: keyFile)
        } catch {
            throw LoadError(isAboutKey: true, description: error.description)
        }
        let chain = try Self.readChain(certificateFile)
        guard X509_check_private_key(chain[0], key.pointer) == 1 else {
            ERR_clear_error()
            for certificate in chain { X509_free(certificate) }
            throw LoadError(
                isAboutKey: true,
                description: "\(keyFile): is not the key of the certificate in \(certificateFile)"
            )
        }
        return TLSClientCertificate(chain: chain, key: key, certificateFile: certificateFile, keyFile: keyFile)
    }

    private static func readChain(_ path: String) throws(LoadError) -> [OpaquePointer] {
        let bytes: [UInt8]
        do throws(IOError) {
            bytes = try readWholeFile(path)
        } catch {
            let reason = error.errnoCode == ENOENT ? "no such file" : "cannot read it: \(error.reason)"
            throw LoadError(isAboutKey: false, description: "\(path): \(reason)")
        }
        var chain: [OpaquePointer] = []
        bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { chain.append(certificate) }
        }
        ERR_clear_error()
        guard !chain.isEmpty else {
            let text = String(decoding: bytes, as: UTF8.self)
            let found =
                text.contains("PRIVATE KEY-----") ? " (it holds a private key: that goes in tls_client_key)" : ""
            throw LoadError(
                isAboutKey: false,
                description: "\(path): holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)\(found)"
            )
        }
        return chain
    }

    /// The leaf's subject, `/O=…/CN=…` (one line, for `--check`).
    package var subject: String { subjectLine(of: self.chain[0]) }

    /// The leaf and its intermediates.
    package var certificateCount: Int { self.chain.count }
}
