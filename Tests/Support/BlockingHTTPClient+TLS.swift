import BearerCore
import BearerHTTP
import BearerIO
import COpenSSL
import Glibc

/// A client's TLS for tests, the way a real client does it: OpenSSL over the blocking socket
/// (its socket BIO, not the proxy's buffer BIO), verifying the server's certificate and name.
final class BlockingTLS {
    let ssl: OpaquePointer
    private let context: OpaquePointer

    init(fd: Int32, serverName: String, caFile: String?, alpn: [String], session: OpaquePointer?) {
        self.context = SSL_CTX_new(TLS_client_method())!
        if let caFile { SSL_CTX_load_verify_locations(self.context, caFile, nil) }
        SSL_CTX_set_verify(self.context, COS_SSL_VERIFY_PEER, nil)
        self.ssl = SSL_new(self.context)!
        SSL_set_fd(self.ssl, fd)
        if SocketAddress(ipAddress: serverName, port: 0) != nil {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(self.ssl), serverName)
        } else {
            _ = cos_set_sni(self.ssl, serverName)
            SSL_set1_host(self.ssl, serverName)
        }
        let protocols = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        if !protocols.isEmpty { _ = SSL_set_alpn_protos(self.ssl, protocols, UInt32(protocols.count)) }
        if let session { SSL_set_session(self.ssl, session) }
    }

    deinit {
        SSL_free(self.ssl)
        SSL_CTX_free(self.context)
    }

    /// Nil when the handshake completed, else OpenSSL's reason.
    func handshake() -> String? {
        ERR_clear_error()
        if SSL_connect(self.ssl) == 1 { return nil }
        let verify = SSL_get_verify_result(self.ssl)
        if verify != COS_X509_V_OK { return String(cString: X509_verify_cert_error_string(verify)) }
        return ERR_reason_error_string(ERR_peek_last_error()).map { String(cString: $0) } ?? "handshake failed"
    }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { SSL_write(self.ssl, $0.baseAddress, Int32($0.count)) }
            if written <= 0 { return }
            offset += Int(written)
        }
    }

    /// Like read(2): bytes, 0 at the end of the session, -1 with errno (EAGAIN after the timeout).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let result = SSL_read(self.ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 { return Int(result) }
        switch SSL_get_error(self.ssl, result) {
        case COS_SSL_ERROR_ZERO_RETURN: return 0
        case COS_SSL_ERROR_SYSCALL where errno == 0 || errno == ECONNRESET: return 0
        case COS_SSL_ERROR_WANT_READ:
            errno = EAGAIN
            return -1
        default:
            return errno == EAGAIN ? -1 : 0
        }
    }
}

extension BlockingHTTPClient {
    /// Sends `CONNECT authority` (through a proxy) and reads its answer's head.
    package func connect(to authority: String) throws(ClientError) -> ResponseHead {
        self.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        return try self.readHead()
    }

    /// Starts TLS over the connection (after a CONNECT's 200, or straight away), verifying the server
    /// as `serverName` against `caFile` (nil: trusting nothing).
    package func startTLS(
        serverName: String,
        caFile: String?,
        alpn: [String] = ["http/1.1"],
        resuming session: OpaquePointer? = nil
    ) throws(ClientError) {
        let tls = BlockingTLS(fd: self.fd, serverName: serverName, caFile: caFile, alpn: alpn, session: session)
        if let failure = tls.handshake() { throw .tlsFailed(failure) }
        self.tls = tls
    }

    /// The certificates the server sent, leaf first, as subject names (`/CN=…`).
    package var peerCertificateSubjects: [String] {
        self.tls.map { peerCertificateChainSubjects(of: $0.ssl) } ?? []
    }

    /// The issuer of the server's leaf (`/CN=…`).
    package var peerCertificateIssuer: String? {
        guard let tls = self.tls, let leaf = SSL_get1_peer_certificate(tls.ssl) else { return nil }
        defer { X509_free(leaf) }
        let name = X509_NAME_oneline(X509_get_issuer_name(leaf), nil, 0)!
        defer { CRYPTO_free(name, #fileID, #line) }
        return String(cString: name)
    }

    package var negotiatedProtocol: String? { self.tls.flatMap { negotiatedApplicationProtocol(of: $0.ssl) } }

    package var wasSessionReused: Bool { self.tls.map { SSL_session_reused($0.ssl) == 1 } ?? false }

    /// The session to resume on a later connection (one reference: free it with SSL_SESSION_free).
    package var tlsSession: OpaquePointer? { self.tls.flatMap { SSL_get1_session($0.ssl) } }
}

@available(*, unavailable)
extension BlockingTLS: Sendable {}
