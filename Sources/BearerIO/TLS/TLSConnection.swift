import COpenSSL
import Glibc

/// One TLS connection over a non-blocking socket (OpenSSL reads and writes the fd itself).
///
/// Every call returns at once: `wantRead`/`wantWrite` say which readiness the connection waits for,
/// and the stream connection turns that into epoll interest. Confined to its loop.
package final class TLSConnection {
    let ssl: OpaquePointer
    let context: TLSContext
    let sessionKey: String?
    package private(set) var isHandshakeComplete = false
    /// Set by the first read that returned data.
    private(set) var storedSessionAfterData = false

    package enum Outcome: Equatable {
        case done(Int)
        case wantRead
        case wantWrite
        /// The peer closed the TLS session (close_notify, or a plain EOF).
        case closed
        case failed(String)
    }

    init(ssl: OpaquePointer, context: TLSContext, sessionKey: String?) {
        self.ssl = ssl
        self.context = context
        self.sessionKey = sessionKey
    }

    deinit {
        SSL_free(self.ssl)
    }

    /// Advances the handshake; `.done(0)` when it is complete.
    package func handshake() -> Outcome {
        ERR_clear_error()
        let result = SSL_do_handshake(self.ssl)
        if result == 1 {
            self.isHandshakeComplete = true
            self.keepSession()
            return .done(0)
        }
        let code = SSL_get_error(self.ssl, result)
        switch code {
        case COS_SSL_ERROR_WANT_READ: return .wantRead
        case COS_SSL_ERROR_WANT_WRITE: return .wantWrite
        default: return .failed(self.describeHandshakeFailure(code))
        }
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        ERR_clear_error()
        let result = SSL_read(self.ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 {
            if !self.storedSessionAfterData {
                // TLS 1.3 session tickets come after the handshake: by the first response they are here.
                self.storedSessionAfterData = true
                self.keepSession()
            }
            return .done(Int(result))
        }
        // A reader that meets a plain EOF or a reset sees the end of the stream; HTTP framing tells
        // whether the message was complete.
        return self.outcome(ofFailed: result, endOfStreamOnReset: true)
    }

    package func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard !bytes.isEmpty else { return .done(0) }
        ERR_clear_error()
        let result = SSL_write(self.ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if result > 0 { return .done(Int(result)) }
        return self.outcome(ofFailed: result, endOfStreamOnReset: false)
    }

    /// What a non-positive SSL_read/SSL_write result means.
    private func outcome(ofFailed result: Int32, endOfStreamOnReset: Bool) -> Outcome {
        switch SSL_get_error(self.ssl, result) {
        case COS_SSL_ERROR_WANT_READ: return .wantRead
        case COS_SSL_ERROR_WANT_WRITE: return .wantWrite
        case COS_SSL_ERROR_ZERO_RETURN:
            if let refusal = self.clientCertificateFailure(alert: nil) { return .failed(refusal) }
            return .closed
        case COS_SSL_ERROR_SYSCALL:
            let saved = errno
            if let refusal = self.clientCertificateFailure(alert: nil) { return .failed(refusal) }
            if endOfStreamOnReset && (saved == 0 || saved == ECONNRESET) { return .closed }
            return .failed(saved == 0 ? "connection closed" : String(cString: strerror(saved)))
        default:
            let alert = Int32(cos_error_reason(ERR_peek_last_error()))
            if let refusal = self.clientCertificateFailure(alert: alert) { return .failed(refusal) }
            return .failed("TLS error: \(lastErrorString())")
        }
    }

    /// Whether decrypted bytes wait inside OpenSSL (epoll cannot know about them).
    package var hasBufferedBytes: Bool {
        SSL_has_pending(self.ssl) == 1
    }

    /// Sends close_notify if the socket takes it now; never waits.
    package func shutdown() {
        guard self.isHandshakeComplete else { return }
        self.keepSession()
        ERR_clear_error()
        _ = SSL_shutdown(self.ssl)
    }

    /// TLS 1.3 tickets arrive after the handshake, so the session is stored again later.
    package func keepSession() {
        guard let key = self.sessionKey else { return }
        self.context.storeSession(of: self.ssl, key: key)
    }

    package var wasSessionReused: Bool {
        SSL_session_reused(self.ssl) == 1
    }

    /// What went wrong in words a person can act on.
    private func describeHandshakeFailure(_ code: Int32) -> String {
        let verify = SSL_get_verify_result(self.ssl)
        if self.context.verifiesPeer && verify != COS_X509_V_OK {
            switch verify {
            case COS_X509_V_ERR_HOSTNAME_MISMATCH, COS_X509_V_ERR_IP_ADDRESS_MISMATCH:
                return "host name mismatch: the upstream's certificate is not valid for this host name"
            case COS_X509_V_ERR_CERT_HAS_EXPIRED:
                return "certificate expired"
            case COS_X509_V_ERR_CERT_NOT_YET_VALID:
                return "certificate not yet valid (check the clock)"
            case COS_X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, COS_X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
                COS_X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, COS_X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
                return "certificate not trusted (signed by an unknown CA; set ca_file to trust a private CA)"
            default:
                return "certificate not trusted: \(String(cString: X509_verify_cert_error_string(verify)))"
            }
        }
        let alert = code == COS_SSL_ERROR_SSL ? Int32(cos_error_reason(ERR_peek_last_error())) : nil
        if let refusal = self.clientCertificateFailure(alert: alert) { return "handshake failed: \(refusal)" }
        if code == COS_SSL_ERROR_SYSCALL {
            let saved = errno
            return "handshake failed: "
                + (saved == 0 ? "the upstream closed the connection" : String(cString: strerror(saved)))
        }
        let error = ERR_peek_last_error()
        switch Int32(cos_error_reason(error)) {
        case COS_SSL_R_UNSUPPORTED_PROTOCOL, COS_SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, COS_SSL_R_NO_PROTOCOLS_AVAILABLE:
            return "protocol version: the upstream does not speak TLS 1.2 or newer"
        case COS_SSL_R_WRONG_VERSION_NUMBER:
            return "handshake failed: the upstream did not answer in TLS (is it plain http?)"
        default:
            return "handshake failed: \(lastErrorString())"
        }
    }
}

@available(*, unavailable)
extension TLSConnection: Sendable {}
