import BearerCore
import COpenSSL
import Glibc

/// One TLS session, client or server role, over two buffers instead of a socket.
///
/// OpenSSL reads the peer's bytes from `received` and writes its own into `produced` (a BIO over
/// these buffers, `TLSBufferBIO`); `TLSTransport`, the layer a stream stacks on its transport,
/// moves them to and from the transport below (readiness, io_uring or memory). So a session can
/// start in the middle of a stream: bytes that arrived before TLS started (a ClientHello right
/// behind a CONNECT head) are simply the first of `received`. Writing never waits (the BIO takes
/// everything; the stream's watermarks bound it), so the only thing a session ever waits for is
/// more of the peer's bytes. Confined to its loop.
package final class TLSConnection {
    let ssl: OpaquePointer
    let context: TLSContext
    /// Client role: the origin whose session is offered for resumption and stored again.
    let sessionKey: String?
    /// Ciphertext from the peer that OpenSSL has not read yet. The BIO reads it in place.
    @exclusivity(unchecked) var received = ByteBuffer()
    /// Ciphertext OpenSSL wrote, for the transport to send.
    @exclusivity(unchecked) var produced = ByteBuffer()
    @exclusivity(unchecked) package private(set) var state: State = .handshaking
    /// The transport delivered the peer's end (FIN): once `received` is read, the BIO reports the end.
    @exclusivity(unchecked) var hasReceivedEnd = false
    /// A client read its first data (and stored its session again: TLS 1.3 tickets come after the
    /// handshake). Before it, a close may be a server refusing the client certificate.
    @exclusivity(unchecked) private(set) var storedSessionAfterData = false

    /// Where the session is. OpenSSL waits only for the peer's bytes (its writes never wait: the BIO
    /// takes everything), so there is nothing else to want: TLS never asks for the socket's readiness.
    package enum State: Equatable {
        /// Valid transitions: .established, .closed.
        case handshaking
        /// Application data both ways. Valid transitions: .outputClosed, .closed.
        case established
        /// close_notify sent; the peer's data is still read (a half-closed relay). Valid transitions: .closed.
        case outputClosed
        /// Failed or abandoned: nothing more goes through OpenSSL.
        case closed
    }

    package enum Outcome: Equatable {
        case done(Int)
        /// OpenSSL needs more of the peer's bytes than `received` holds.
        case needsMoreBytes
        /// The peer closed the TLS session (close_notify, or a plain end of the stream).
        case ended
        case failed(TLSFailure)
    }

    init(ssl: OpaquePointer, context: TLSContext, sessionKey: String?) {
        self.ssl = ssl
        self.context = context
        self.sessionKey = sessionKey
        TLSBufferBIO.attach(to: ssl, owner: self)
    }

    deinit {
        SSL_free(self.ssl)
    }

    package var isServer: Bool { self.context.isServer }

    /// Takes the owner's data to encrypt.
    package var isEstablished: Bool { self.state == .established }

    /// Bytes of the peer's wait to be decrypted: in `received`, or already decrypted inside OpenSSL.
    var hasBufferedInput: Bool {
        self.received.readableBytes > 0 || SSL_has_pending(self.ssl) == 1
    }

    // MARK: Handshake

    enum HandshakeOutcome: Equatable {
        case done
        /// OpenSSL needs more of the peer's bytes than `received` holds.
        case needsMoreBytes
        case failed(TLSFailure)
    }

    /// Advances the handshake over what `received` holds.
    func handshake() -> HandshakeOutcome {
        guard self.state == .handshaking else { return .done }
        clearErrorQueue()
        let result = SSL_do_handshake(self.ssl)
        if result == 1 {
            self.state = .established
            self.keepSession()
            // The data path reads the queue only after a failure: whatever a successful handshake
            // left in it (verification marks) must not be read as the data's failure.
            clearErrorQueue()
            return .done
        }
        let code = SSL_get_error(self.ssl, result)
        if code == COS_SSL_ERROR_WANT_READ && !self.hasReceivedEnd { return .needsMoreBytes }
        self.state = .closed
        return .failed(self.isServer ? self.serverHandshakeFailure(code) : self.clientHandshakeFailure(code))
    }

    // MARK: Data

    /// Decrypts into `buffer`.
    ///
    /// The data path reads no error queue until a call fails for another reason than "want read"
    /// (`ERR_peek_error` alone is about 200 instructions, paid on every record before): a success
    /// needs none, and OpenSSL's own state tells a want-read. Errors are read only after a failure,
    /// and the queue is emptied then (`clearingErrorQueue`), so the next call's starts empty.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        guard self.state == .established || self.state == .outputClosed else { return .ended }
        let result = SSL_read(self.ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 {
            if !self.storedSessionAfterData && !self.isServer {
                // TLS 1.3 session tickets come after the handshake: by the first response they are here.
                self.storedSessionAfterData = true
                self.keepSession()
            }
            return .done(Int(result))
        }
        if cos_ssl_wants_read(self.ssl) == 1 && !self.hasReceivedEnd { return .needsMoreBytes }
        return clearingErrorQueue { self.readFailure(result) }
    }

    /// What a read that did not return bytes means, from OpenSSL's error code and queue.
    private func readFailure(_ result: Int32) -> Outcome {
        switch SSL_get_error(self.ssl, result) {
        case COS_SSL_ERROR_WANT_READ where !self.hasReceivedEnd:
            return .needsMoreBytes
        case COS_SSL_ERROR_WANT_READ, COS_SSL_ERROR_ZERO_RETURN, COS_SSL_ERROR_SYSCALL:
            // close_notify, or the end of the stream without one: HTTP framing tells whether the
            // message was complete (unless a server ended it over the client certificate).
            return self.failure(alert: nil) ?? .ended
        default:
            return self.failure(alert: Int32(cos_error_reason(ERR_peek_last_error())))
                ?? self.failed("TLS error: \(lastErrorString())")
        }
    }

    /// A read or write that failed over the client certificate (TLSConnection+ClientCertificate).
    private func failure(alert: Int32?) -> Outcome? {
        self.clientCertificateFailure(alert: alert).map(self.failed)
    }

    private func failed(_ words: String) -> Outcome {
        self.state = .closed
        return .failed(.other(words))
    }

    /// Encrypts all of `bytes` into `produced`.
    func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard self.isEstablished else { return .failed(.other("TLS session closed")) }
        var offset = 0
        while offset < bytes.count {
            let remaining = bytes.count - offset
            let result = SSL_write(self.ssl, bytes.baseAddress! + offset, Int32(clamping: remaining))
            guard result > 0 else {
                // A success needs no error queue (see `read`); a failure reads it, then empties it.
                return clearingErrorQueue {
                    let alert = Int32(cos_error_reason(ERR_peek_last_error()))
                    return self.failure(alert: alert) ?? self.failed("TLS error: \(lastErrorString())")
                }
            }
            offset += Int(result)
        }
        return .done(offset)
    }

    /// Writes close_notify into `produced` (once); the session takes no more data to send, and the
    /// peer's data is still read.
    func shutdown() {
        guard self.isEstablished else { return }
        self.keepSession()
        clearErrorQueue()
        _ = SSL_shutdown(self.ssl)
        self.state = .outputClosed
    }

    /// A client keeps the newest session of its origin, so that the next connection resumes it.
    func keepSession() {
        guard let key = self.sessionKey, !self.isServer else { return }
        self.context.storeSession(of: self.ssl, key: key)
    }

    package var wasSessionReused: Bool {
        SSL_session_reused(self.ssl) == 1
    }

    /// A client's offer becomes ALPN `h2, http/1.1` (RFC 9113 §3.2), for this connection only:
    /// call before the handshake.
    package func offerHTTP2() {
        let protocols: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
        _ = protocols.withUnsafeBufferPointer { SSL_set_alpn_protos(self.ssl, $0.baseAddress, UInt32($0.count)) }
    }

    /// The protocol ALPN agreed on, if any.
    package var negotiatedProtocol: String? { negotiatedApplicationProtocol(of: self.ssl) }

    // MARK: Failures in words

    /// Why a handshake with an upstream failed, in words a person can act on.
    private func clientHandshakeFailure(_ code: Int32) -> TLSFailure {
        let verify = SSL_get_verify_result(self.ssl)
        if self.context.verifiesPeer && verify != COS_X509_V_OK {
            switch verify {
            case COS_X509_V_ERR_HOSTNAME_MISMATCH, COS_X509_V_ERR_IP_ADDRESS_MISMATCH:
                return .other("host name mismatch: the upstream's certificate is not valid for this host name")
            case COS_X509_V_ERR_CERT_HAS_EXPIRED:
                return .other("certificate expired")
            case COS_X509_V_ERR_CERT_NOT_YET_VALID:
                return .other("certificate not yet valid (check the clock)")
            case COS_X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, COS_X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
                COS_X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, COS_X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
                return .other("certificate not trusted (signed by an unknown CA; set ca_file to trust a private CA)")
            default:
                return .other("certificate not trusted: \(String(cString: X509_verify_cert_error_string(verify)))")
            }
        }
        let alert = code == COS_SSL_ERROR_SSL ? Int32(cos_error_reason(ERR_peek_last_error())) : nil
        if let refusal = self.clientCertificateFailure(alert: alert) { return .other("handshake failed: \(refusal)") }
        if self.endedDuringHandshake(code) {
            return .other("handshake failed: the upstream closed the connection")
        }
        switch Int32(cos_error_reason(ERR_peek_last_error())) {
        case COS_SSL_R_UNSUPPORTED_PROTOCOL, COS_SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, COS_SSL_R_NO_PROTOCOLS_AVAILABLE:
            return .other("protocol version: the upstream does not speak TLS 1.2 or newer")
        case COS_SSL_R_WRONG_VERSION_NUMBER:
            return .other("handshake failed: the upstream did not answer in TLS (is it plain http?)")
        default:
            return .other("handshake failed: \(lastErrorString())")
        }
    }

    /// Why a client's handshake with this server failed: above all, whether it refused the certificate.
    private func serverHandshakeFailure(_ code: Int32) -> TLSFailure {
        if self.endedDuringHandshake(code) { return .peerClosedDuringHandshake }
        let reason = Int32(cos_error_reason(ERR_peek_last_error()))
        switch reason {
        case COS_SSL_R_TLSV1_ALERT_UNKNOWN_CA, COS_SSL_R_SSLV3_ALERT_BAD_CERTIFICATE,
            COS_SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN, COS_SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE,
            COS_SSL_R_TLSV1_ALERT_ACCESS_DENIED:
            return .certificateRefused(alert: lastErrorString())
        case COS_SSL_R_WRONG_VERSION_NUMBER, COS_SSL_R_HTTP_REQUEST, COS_SSL_R_HTTPS_PROXY_REQUEST:
            return .notTLS
        case COS_SSL_R_UNSUPPORTED_PROTOCOL, COS_SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, COS_SSL_R_NO_PROTOCOLS_AVAILABLE:
            return .protocolVersion
        default:
            return .other("handshake failed: \(lastErrorString())")
        }
    }

    /// The peer's bytes ended before the handshake did.
    private func endedDuringHandshake(_ code: Int32) -> Bool {
        if code == COS_SSL_ERROR_SYSCALL || code == COS_SSL_ERROR_ZERO_RETURN { return true }
        if code == COS_SSL_ERROR_WANT_READ { return self.hasReceivedEnd }
        return Int32(cos_error_reason(ERR_peek_last_error())) == COS_SSL_R_UNEXPECTED_EOF_WHILE_READING
    }
}

/// Empties this thread's OpenSSL error queue, which `SSL_get_error` reads after a call. Only when it
/// holds something: `ERR_clear_error` on an empty queue still clears each of its 16 slots, about 800
/// instructions, which the data path paid on every `SSL_read` and `SSL_write`.
@inline(__always)
func clearErrorQueue() {
    if ERR_peek_error() != 0 { ERR_clear_error() }
}

/// Reads a failure out of OpenSSL's error queue with `body`, then empties the queue, so that the
/// data path, which calls `SSL_read` and `SSL_write` without clearing it first, starts empty.
@inline(__always)
func clearingErrorQueue<Result>(_ body: () -> Result) -> Result {
    defer { clearErrorQueue() }
    return body()
}

/// The protocol ALPN agreed on for `ssl` (any `SSL*`: the proxy's sessions, the tests' clients), if any.
package func negotiatedApplicationProtocol(of ssl: OpaquePointer) -> String? {
    var data: UnsafePointer<UInt8>?
    var length: UInt32 = 0
    SSL_get0_alpn_selected(ssl, &data, &length)
    guard let data, length > 0 else { return nil }
    return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
}

/// Why a TLS session failed, in words for a person; the server role's cases name what the client did.
package enum TLSFailure: Equatable, Sendable, CustomStringConvertible {
    /// The client sent an alert saying it does not accept the certificate (it does not trust its issuer).
    case certificateRefused(alert: String)
    /// The client closed the connection before the handshake completed (some clients refuse a
    /// certificate this way, without an alert).
    case peerClosedDuringHandshake
    /// The client's bytes are not TLS.
    case notTLS
    /// The client offers nothing newer than TLS 1.1.
    case protocolVersion
    case other(String)

    package var description: String {
        switch self {
        case .certificateRefused(let alert): "the client refused the certificate (\(alert))"
        case .peerClosedDuringHandshake: "the client closed the connection during the TLS handshake"
        case .notTLS: "the client did not speak TLS"
        case .protocolVersion: "protocol version: the client does not speak TLS 1.2 or newer"
        case .other(let words): words
        }
    }
}

@available(*, unavailable)
extension TLSConnection: Sendable {}
