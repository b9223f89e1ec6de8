import COpenSSL

/// What a failed connection says when it is about the client certificate (RFC 8705 mutual TLS).
///
/// A server that wants a certificate and gets none ends the handshake with an alert. Under TLS 1.2
/// that alert ends the handshake itself; under TLS 1.3 the client's handshake is already complete,
/// so the alert (or, when the server closes with the request unread, a reset) meets the first read
/// or write, where it would otherwise read as "the upstream reset the connection".
extension TLSConnection {
    /// An ex_data slot of every `SSL`: set once its server asked for a client certificate
    /// (`TLSContext.noteCertificateRequests`).
    static let certificateRequestedIndex: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)

    /// Whether the server asked for a client certificate (RFC 8446 §4.3.2, RFC 5246 §7.4.4).
    package var serverAskedForCertificate: Bool {
        SSL_get_ex_data(self.ssl, Self.certificateRequestedIndex) != nil
    }

    /// The sentence for a failure that is about the client certificate, or nil when it is not.
    /// `alert` is OpenSSL's reason for the failure (a TLS alert from the server), when there is one.
    ///
    /// Only when the server asked for a certificate, and before it sent any data: once it has
    /// answered, a close or a reset is the end of an exchange, not a refusal of this client.
    func clientCertificateFailure(alert: Int32?) -> String? {
        guard self.serverAskedForCertificate, !self.storedSessionAfterData else { return nil }
        let alertText = alert.map { _ in " (\(lastErrorString()))" } ?? ""
        guard self.context.presentsClientCertificate else {
            return "the server asked for a TLS client certificate and none is configured"
                + " (set tls_client_cert and tls_client_key)\(alertText)"
        }
        let advice = "is tls_client_cert issued by a CA it trusts, and still valid?"
        guard let alert else {
            return "the server ended the connection without a word after asking for the TLS client certificate:"
                + " it may have refused it (\(advice))"
        }
        guard Self.certificateAlerts.contains(alert) else { return nil }
        return "the server refused the TLS client certificate\(alertText): \(advice)"
    }

    /// `error` in TLS's words when it ended a connection whose server asked for a client
    /// certificate and never answered (a reset the socket reported before TLS saw the alert).
    func explain(_ error: IOError) -> IOError {
        guard !error.isTLSFailure, let refusal = self.clientCertificateFailure(alert: nil) else { return error }
        return .tls(.other(refusal))
    }

    /// Alerts a server sends about the client's certificate (RFC 8446 §6.2).
    private static let certificateAlerts: Set<Int32> = [
        SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED, SSL_R_SSLV3_ALERT_BAD_CERTIFICATE,
        SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE, SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED,
        SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED, SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN, SSL_R_TLSV1_ALERT_UNKNOWN_CA,
        SSL_R_TLSV1_ALERT_ACCESS_DENIED, SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE,
    ]

    /// The subject of the certificate the peer presented, `/CN=…` (a server's view of its client).
    package var peerCertificateSubject: String? {
        guard let certificate = SSL_get1_peer_certificate(self.ssl) else { return nil }
        defer { X509_free(certificate) }
        return subjectLine(of: certificate)
    }
}

/// A certificate's subject as one line, `/O=…/CN=…`.
package func subjectLine(of certificate: OpaquePointer) -> String {
    guard let name = X509_get_subject_name(certificate) else { return "?" }
    var buffer = [CChar](repeating: 0, count: 256)
    guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "?" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
