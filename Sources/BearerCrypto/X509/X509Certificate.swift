import BearerIO
import COpenSSL
import Glibc

/// An X.509 certificate held by OpenSSL (`X509*`, one reference owned).
///
/// Sendable: a certificate is never changed once built or parsed, and OpenSSL counts its references
/// atomically, so threads may read it, sign with its issuer's key, or put it in a TLS context at once.
package final class X509Certificate: @unchecked Sendable {
    package let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(self.pointer)
    }

    /// The first certificate of PEM text; nil when there is none.
    static func parse(pem: [UInt8]) -> X509Certificate? {
        withMemoryBIO(pem) { bio in PEM_read_bio_X509(bio, nil, nil, nil) }.map(X509Certificate.init(taking:))
    }

    /// The certificate as PEM text (`-----BEGIN CERTIFICATE-----`).
    var pem: [UInt8] {
        writingToMemoryBIO { bio in PEM_write_bio_X509(bio, self.pointer) == 1 }
    }

    /// The end of its validity, in seconds since 1970.
    package var notAfter: Int64 { epochSeconds(X509_get0_notAfter(self.pointer)) }

    /// The start of its validity, in seconds since 1970.
    var notBefore: Int64 { epochSeconds(X509_get0_notBefore(self.pointer)) }

    /// Whether `issuer`'s key made this certificate's signature.
    func isSigned(by issuer: X509Certificate) -> Bool {
        guard let key = X509_get0_pubkey(issuer.pointer) else { return false }
        ERR_clear_error()
        return X509_verify(self.pointer, key) == 1
    }

    /// Whether `key` is the private half of this certificate's public key.
    func isCertified(_ key: PEMPrivateKey) -> Bool {
        ERR_clear_error()
        return X509_check_private_key(self.pointer, key.pointer) == 1
    }

    /// The extension `nid`'s decoded value (`X509_get_ext_d2i`), which the caller frees; nil when absent.
    func decodedExtension(_ nid: Int32) -> (value: UnsafeMutableRawPointer, isCritical: Bool)? {
        var critical: Int32 = -1
        guard let value = X509_get_ext_d2i(self.pointer, nid, &critical, nil) else { return nil }
        return (value, critical == 1)
    }
}

/// Seconds since 1970 of an ASN.1 time (0 when OpenSSL cannot read it).
private func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
    var parts = tm()
    guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return 0 }
    return Int64(timegm(&parts))
}
