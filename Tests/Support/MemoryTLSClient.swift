import BearerCore
import BearerIO
import COpenSSL
import Foundation
import Glibc

/// A blocking byte stream a test holds: a socket, a connection through a proxy.
package protocol BlockingByteChannel {
    func send(_ bytes: [UInt8])
    /// What one read returns; empty at the end of the stream or after the receive timeout.
    func receiveSome() -> [UInt8]
    func shutdownWrite()
}

extension BlockingHTTPClient: BlockingByteChannel {
    package func receiveSome() -> [UInt8] { self.readSome() ?? [] }
}

/// A TLS client for tests: OpenSSL's own memory BIOs over a blocking channel (not the library's
/// `TLSBufferBIO`), so the server side is checked by code it does not share, and the handshake's
/// bytes go out in whatever pieces, and with whatever before them, a test wants.
package final class MemoryTLSClient {
    package struct Options {
        /// Verify the server against this CA (nil: the system store, which does not know the test CA).
        package var caFile: String?
        package var serverName = "localhost"
        package var alpn: [String] = ["http/1.1"]
        /// TLS1_1_VERSION to offer nothing newer than TLS 1.1.
        package var maximumVersion: Int? = nil
        /// A session from an earlier connection, offered for resumption.
        package var session: OpaquePointer? = nil

        package init(
            caFile: String?,
            serverName: String = "localhost",
            alpn: [String] = ["http/1.1"],
            maximumVersion: Int? = nil,
            session: OpaquePointer? = nil
        ) {
            self.caFile = caFile
            self.serverName = serverName
            self.alpn = alpn
            self.maximumVersion = maximumVersion
            self.session = session
        }
    }

    package enum Failure: Error, Equatable {
        case handshake(String)
        case closed
    }

    package let socket: any BlockingByteChannel
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer

    package init(socket: any BlockingByteChannel, _ options: Options) {
        self.socket = socket
        self.context = SSL_CTX_new(TLS_client_method())!
        if let maximum = options.maximumVersion {
            SSL_CTX_set_security_level(self.context, 0)
            _ = SSL_CTX_ctrl(self.context, SSL_CTRL_SET_MAX_PROTO_VERSION, maximum, nil)
        }
        if let caFile = options.caFile { SSL_CTX_load_verify_locations(self.context, caFile, nil) }
        SSL_CTX_set_verify(self.context, COS_SSL_VERIFY_PEER, nil)
        self.ssl = SSL_new(self.context)!
        self.input = BIO_new(BIO_s_mem())!
        self.output = BIO_new(BIO_s_mem())!
        SSL_set_bio(self.ssl, self.input, self.output)
        SSL_set_connect_state(self.ssl)
        _ = cos_set_sni(self.ssl, options.serverName)
        SSL_set1_host(self.ssl, options.serverName)
        let protocols = options.alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        if !protocols.isEmpty { _ = SSL_set_alpn_protos(self.ssl, protocols, UInt32(protocols.count)) }
        if let session = options.session { SSL_set_session(self.ssl, session) }
    }

    deinit {
        SSL_free(self.ssl)
        SSL_CTX_free(self.context)
    }

    /// Runs the handshake as far as it goes without the server's answer: the ClientHello.
    package func clientHello() -> [UInt8] {
        ERR_clear_error()
        _ = SSL_do_handshake(self.ssl)
        return self.takeOutput()
    }

    /// Sends what the handshake produced and feeds it the server's bytes until it completes.
    package func finishHandshake() throws(Failure) {
        while true {
            // SSL_get_error reads this thread's error queue: an error an earlier test left on the
            // thread would turn a want-read into a failure, and be reported as this handshake's.
            ERR_clear_error()
            let result = SSL_do_handshake(self.ssl)
            self.socket.send(self.takeOutput())
            if result == 1 { return }
            guard SSL_get_error(self.ssl, result) == COS_SSL_ERROR_WANT_READ else {
                let reason = ERR_reason_error_string(ERR_peek_last_error()).map { String(cString: $0) }
                throw .handshake(reason ?? "handshake failed")
            }
            let bytes = self.socket.receiveSome()
            guard !bytes.isEmpty else { throw .closed }
            _ = bytes.withUnsafeBytes { BIO_write(self.input, $0.baseAddress, Int32($0.count)) }
        }
    }

    /// Bytes of the server's that arrived with something else (they are the handshake's).
    package func feed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { BIO_write(self.input, $0.baseAddress, Int32($0.count)) }
    }

    package func write(_ text: String) {
        let bytes = Array(text.utf8)
        ERR_clear_error()
        _ = bytes.withUnsafeBytes { SSL_write(self.ssl, $0.baseAddress, Int32($0.count)) }
        self.socket.send(self.takeOutput())
    }

    /// Reads `count` decrypted bytes, or fewer when the server ends the session.
    package func read(count: Int) -> (bytes: [UInt8], sawCloseNotify: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while received.count < count {
            ERR_clear_error()
            let result = buffer.withUnsafeMutableBytes { SSL_read(self.ssl, $0.baseAddress, Int32($0.count)) }
            if result > 0 {
                received += buffer[0..<Int(result)]
                continue
            }
            switch SSL_get_error(self.ssl, result) {
            case COS_SSL_ERROR_WANT_READ:
                let bytes = self.socket.receiveSome()
                if bytes.isEmpty { return (received, false) }
                _ = bytes.withUnsafeBytes { BIO_write(self.input, $0.baseAddress, Int32($0.count)) }
            case COS_SSL_ERROR_ZERO_RETURN:
                return (received, true)
            default:
                return (received, false)
            }
        }
        return (received, false)
    }

    package var negotiatedProtocol: String? { negotiatedApplicationProtocol(of: self.ssl) }

    package var version: String { String(cString: SSL_get_version(self.ssl)) }
    package var wasSessionReused: Bool { SSL_session_reused(self.ssl) == 1 }
    /// The session to offer next time (one reference, the caller's to free).
    package var session: OpaquePointer? { SSL_get1_session(self.ssl) }

    /// The certificates the server sent, leaf first, as subject names.
    package var peerChainSubjects: [String] { peerCertificateChainSubjects(of: self.ssl) }

    private func takeOutput() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(self.output))
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        _ = bytes.withUnsafeMutableBytes { BIO_read(self.output, $0.baseAddress, Int32(pending)) }
        return bytes
    }
}

/// The certificates `ssl`'s peer sent, leaf first, as subject names (`/CN=…`).
package func peerCertificateChainSubjects(of ssl: OpaquePointer) -> [String] {
    guard let chain = SSL_get_peer_cert_chain(ssl) else { return [] }
    return (0..<OPENSSL_sk_num(chain)).map { subjectLine(of: OpaquePointer(OPENSSL_sk_value(chain, $0))) }
}
