import BearerCore
import COpenSSL
import Foundation
import Glibc

@testable import BearerIO

/// The TLS fixtures of the whole suite (Tests/Fixtures/tls).
enum TLSFixtureFiles {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/tls")
    static var caFile: String { directory.appendingPathComponent("ca.pem").path }

    static func serverContext() throws -> TLSContext {
        try TLSContext.server(
            certificateChainFile: directory.appendingPathComponent("server.pem").path,
            privateKeyFile: directory.appendingPathComponent("server.key").path
        )
    }
}

/// A TLS client for tests: OpenSSL's own memory BIOs over a blocking socket (not the library's
/// `TLSBufferBIO`), so the server side is checked by code it does not share, and the handshake's
/// bytes go out in whatever pieces a test wants.
final class MemoryTLSClient {
    struct Options {
        /// Verify the server against this CA (nil: the system store, which does not know the test CA).
        var caFile: String? = TLSFixtureFiles.caFile
        var serverName = "localhost"
        var alpn: [String] = ["http/1.1"]
        /// TLS1_1_VERSION to offer nothing newer than TLS 1.1.
        var maximumVersion: Int? = nil
        /// A session from an earlier connection, offered for resumption.
        var session: OpaquePointer? = nil
    }

    enum Failure: Error, Equatable {
        case handshake(String)
        case closed
    }

    let socket: BlockingSocket
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer

    init(socket: BlockingSocket, _ options: Options = Options()) {
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
    func clientHello() -> [UInt8] {
        _ = SSL_do_handshake(self.ssl)
        return self.takeOutput()
    }

    /// Sends what the handshake produced and feeds it the server's bytes until it completes.
    func finishHandshake() throws(Failure) {
        while true {
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
    func feed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { BIO_write(self.input, $0.baseAddress, Int32($0.count)) }
    }

    func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { SSL_write(self.ssl, $0.baseAddress, Int32($0.count)) }
        self.socket.send(self.takeOutput())
    }

    /// Reads `count` decrypted bytes, or fewer when the server ends the session.
    func read(count: Int) -> (bytes: [UInt8], sawCloseNotify: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while received.count < count {
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

    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(self.ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    var version: String { String(cString: SSL_get_version(self.ssl)) }
    var wasSessionReused: Bool { SSL_session_reused(self.ssl) == 1 }
    /// The session to offer next time (one reference, the caller's to free).
    var session: OpaquePointer? { SSL_get1_session(self.ssl) }

    /// The certificates the server sent, leaf first, as subject names.
    var peerChainSubjects: [String] {
        guard let chain = SSL_get_peer_cert_chain(self.ssl) else { return [] }
        return (0..<OPENSSL_sk_num(chain)).map { index in
            let certificate = OpaquePointer(OPENSSL_sk_value(chain, index))
            let name = X509_NAME_oneline(X509_get_subject_name(certificate), nil, 0)!
            defer { CRYPTO_free(name, #file, #line) }
            return String(cString: name)
        }
    }

    private func takeOutput() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(self.output))
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        _ = bytes.withUnsafeMutableBytes { BIO_read(self.output, $0.baseAddress, Int32(pending)) }
        return bytes
    }
}

extension BlockingSocket {
    /// One read: what has arrived (empty at the end of the stream or after the receive timeout).
    func receiveSome() -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { Glibc.read(self.fd, $0.baseAddress, $0.count) }
        return count > 0 ? Array(chunk[0..<count]) : []
    }

    /// Sends `bytes` in pieces of `size`, each its own segment (TCP_NODELAY, a pause between).
    func sendInPieces(_ bytes: [UInt8], size: Int) {
        var one: Int32 = 1
        setsockopt(self.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            self.send(Array(bytes[offset..<end]))
            offset = end
            usleep(2_000)
        }
    }
}
