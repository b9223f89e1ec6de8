import COpenSSL
import Foundation

/// Reads certificates the way a client would, for the tests of the local CA: OpenSSL's own parser,
/// printer and verifier, never the code that wrote them.
package enum CertificateInspection {
    /// One extension as OpenSSL prints it (`openssl x509 -text`), each line trimmed.
    package struct PrintedExtension: Equatable, CustomStringConvertible {
        package var isCritical: Bool
        package var lines: [String]
        package init(isCritical: Bool, lines: [String]) {
            self.isCritical = isCritical
            self.lines = lines
        }
        package var description: String { (self.isCritical ? "critical " : "") + self.lines.joined(separator: " | ") }
    }

    /// An owned `X509*` parsed by OpenSSL from PEM.
    package final class Certificate {
        package let pointer: OpaquePointer
        package init?(pem: String) {
            let bytes = Array(pem.utf8)
            guard
                let parsed = bytes.withUnsafeBytes({ raw -> OpaquePointer? in
                    guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
                    defer { BIO_free(bio) }
                    return PEM_read_bio_X509(bio, nil, nil, nil)
                })
            else { return nil }
            self.pointer = parsed
        }
        package convenience init?(file: String) {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
            self.init(pem: text)
        }
        deinit { X509_free(self.pointer) }

        /// Extensions by short name (`basicConstraints`, `keyUsage`, `nameConstraints`, …).
        package var extensions: [String: PrintedExtension] {
            var result: [String: PrintedExtension] = [:]
            for index in 0..<X509_get_ext_count(self.pointer) {
                guard let item = X509_get_ext(self.pointer, index) else { continue }
                let name = String(cString: OBJ_nid2sn(OBJ_obj2nid(X509_EXTENSION_get_object(item))))
                let text = printed { bio in X509V3_EXT_print(bio, item, 0, 0) == 1 }
                result[name] = PrintedExtension(
                    isCritical: X509_EXTENSION_get_critical(item) == 1,
                    lines: text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                        .filter { !$0.isEmpty }
                )
            }
            return result
        }

        package var subject: String {
            printed { X509_NAME_print_ex($0, X509_get_subject_name(self.pointer), 0, 0) >= 0 }
        }
        package var issuer: String { printed { X509_NAME_print_ex($0, X509_get_issuer_name(self.pointer), 0, 0) >= 0 } }

        /// `id-ecPublicKey` on `prime256v1`.
        package var isECP256: Bool {
            guard let key = X509_get0_pubkey(self.pointer), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
                return false
            }
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return false }
            return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        }

        package var signatureAlgorithm: String {
            String(cString: OBJ_nid2ln(X509_get_signature_nid(self.pointer)))
        }

        package var notBefore: Int64 { epoch(X509_get0_notBefore(self.pointer)) }
        package var notAfter: Int64 { epoch(X509_get0_notAfter(self.pointer)) }

        /// Whether `key` (PEM) is this certificate's private key.
        package func isCertified(byKeyPEM pem: String) -> Bool {
            let bytes = Array(pem.utf8)
            return bytes.withUnsafeBytes { raw in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return false }
                defer { BIO_free(bio) }
                // No pass phrase (an encrypted key is not the root's): OpenSSL would ask the terminal.
                guard let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else { return false }
                defer { EVP_PKEY_free(key) }
                ERR_clear_error()
                return X509_check_private_key(self.pointer, key) == 1
            }
        }
    }

    /// OpenSSL's chain verification (what curl and Python's ssl module run): `leaf` up to the trusted
    /// `root` through `intermediates`, for `host` (a DNS name or an IP address). nil when it verifies,
    /// else OpenSSL's reason.
    package static func verify(
        _ leaf: Certificate,
        intermediates: [Certificate],
        root: Certificate,
        host: String,
        at time: Int64? = nil
    ) -> String? {
        guard let store = X509_STORE_new(), let context = X509_STORE_CTX_new(), let chain = OPENSSL_sk_new_null()
        else { return "cannot allocate" }
        defer {
            OPENSSL_sk_free(chain)
            X509_STORE_CTX_free(context)
            X509_STORE_free(store)
        }
        X509_STORE_add_cert(store, root.pointer)
        for intermediate in intermediates { OPENSSL_sk_push(chain, UnsafeRawPointer(intermediate.pointer)) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, chain) == 1 else { return "cannot init" }
        let parameters = X509_STORE_CTX_get0_param(context)
        if host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) {
            X509_VERIFY_PARAM_set1_ip_asc(parameters, host)
        } else {
            X509_VERIFY_PARAM_set1_host(parameters, host, 0)
        }
        X509_VERIFY_PARAM_set_purpose(parameters, X509_PURPOSE_SSL_SERVER)
        if let time { X509_VERIFY_PARAM_set_time(parameters, time_t(time)) }
        if X509_verify_cert(context) == 1 { return nil }
        return String(cString: X509_verify_cert_error_string(Int(X509_STORE_CTX_get_error(context))))
    }

    /// The paths and texts of the small regular files under `directory` that hold a PEM private key
    /// (`-----BEGIN … PRIVATE KEY-----`), `depth` folders down; links are not followed.
    package static func privateKeyFiles(under directory: String, depth: Int = 4) -> [(path: String, text: String)] {
        guard depth > 0, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var found: [(path: String, text: String)] = []
        for name in names {
            let path = directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                found += Self.privateKeyFiles(under: path, depth: depth - 1)
            } else if info.st_mode & S_IFMT == S_IFREG && info.st_size < 1 << 16,
                let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains("PRIVATE KEY-----")
            {
                found.append((path, text))
            }
        }
        return found
    }

    private static func epoch(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return 0 }
        return Int64(timegm(&parts))
    }
}

/// What `body` prints into a memory BIO.
private func printed(_ body: (OpaquePointer) -> Bool) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { return "" }
    defer { BIO_free(bio) }
    guard body(bio) else { return "" }
    var data: UnsafePointer<CChar>?
    let length = cos_bio_mem_data(bio, &data)
    guard let data, length > 0 else { return "" }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
}
