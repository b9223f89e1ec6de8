import BearerIO
import COpenSSL
import Glibc

/// What a certificate the local CA makes says: subject, validity, extensions. `sign` turns it into
/// an X.509 v3 certificate, signed with ECDSA over SHA-256.
///
/// Extensions are given in OpenSSL's configuration syntax (`critical,CA:TRUE,pathlen:1`) and parsed
/// by OpenSSL itself (`X509V3_EXT_nconf_nid`): the encoding is OpenSSL's, not ours. Every name that
/// goes into one is a validated host name or a re-printed IP address, so no value can add a field.
struct CertificateRequest {
    /// Relative distinguished names, in order: `("O", "bearer-proxy")`, `("CN", …)`.
    var subject: [(field: String, value: String)]
    var notBefore: Int64
    var notAfter: Int64
    /// `(NID_basic_constraints, "critical,CA:TRUE,pathlen:1")`, …
    var extensions: [(nid: Int32, value: String)]

    struct SigningError: Error, CustomStringConvertible {
        var description: String
    }

    /// The certificate for `subjectKey`, issued by `issuer` (nil: self-signed) with `issuerKey`.
    func sign(
        subjectKey: PEMPrivateKey,
        issuer: X509Certificate?,
        issuerKey: PEMPrivateKey
    ) throws(SigningError) -> X509Certificate {
        ERR_clear_error()
        guard let x509 = X509_new() else { throw SigningError(description: "cannot allocate a certificate") }
        let certificate = X509Certificate(taking: x509)
        guard X509_set_version(x509, Int(X509_VERSION_3)) == 1,
            Self.setRandomSerial(x509),
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(self.notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(self.notAfter)) != nil,
            X509_set_pubkey(x509, subjectKey.pointer) == 1
        else { throw Self.failure("cannot fill in the certificate") }
        guard let name = X509_NAME_new() else { throw Self.failure("cannot allocate a name") }
        defer { X509_NAME_free(name) }
        for (field, value) in self.subject {
            guard X509_NAME_add_entry_by_txt(name, field, COS_MBSTRING_UTF8, value, -1, -1, 0) == 1 else {
                throw Self.failure("cannot set the subject's \(field)")
            }
        }
        guard X509_set_subject_name(x509, name) == 1,
            X509_set_issuer_name(x509, issuer.map { X509_get_subject_name($0.pointer) } ?? name) == 1
        else { throw Self.failure("cannot set the subject and issuer") }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.pointer ?? x509, x509, nil, nil, 0)
        for (nid, value) in self.extensions {
            guard let extensionValue = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw Self.failure("cannot encode extension \(String(cString: OBJ_nid2sn(nid))) = \(value)")
            }
            defer { X509_EXTENSION_free(extensionValue) }
            guard X509_add_ext(x509, extensionValue, -1) == 1 else { throw Self.failure("cannot add an extension") }
        }
        guard X509_sign(x509, issuerKey.pointer, EVP_sha256()) > 0 else { throw Self.failure("cannot sign") }
        return certificate
    }

    /// 128 random bits, positive (RFC 5280 §4.1.2.2: unique per issuer, at most 20 octets).
    private static func setRandomSerial(_ x509: OpaquePointer) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { return false }
        bytes[0] &= 0x7f
        bytes[0] |= 0x40
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else { return false }
        defer { BN_free(number) }
        guard let serial = BN_to_ASN1_INTEGER(number, nil) else { return false }
        defer { ASN1_INTEGER_free(serial) }
        return X509_set_serialNumber(x509, serial) == 1
    }

    private static func failure(_ what: String) -> SigningError {
        SigningError(description: "\(what): \(lastOpenSSLError())")
    }
}

/// The newest error on OpenSSL's queue for this thread, in OpenSSL's words.
package func lastOpenSSLError() -> String {
    let code = ERR_peek_last_error()
    guard code != 0, let text = ERR_reason_error_string(code) else { return "unknown error" }
    return String(cString: text)
}
