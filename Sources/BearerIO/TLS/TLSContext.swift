import BearerCore
import COpenSSL
import Glibc
import Synchronization

/// How a TLS context is configured wrongly: an unreadable CA bundle, a bad certificate.
package struct TLSConfigurationError: Error, CustomStringConvertible, Sendable {
    package var description: String
}

/// An OpenSSL `SSL_CTX`: trust settings shared by every TLS connection of a proxy (thread-safe in
/// OpenSSL for creating connections), and the client session cache used to resume TLS sessions
/// when a new connection to the same origin opens.
///
/// Either role: a client context (upstreams, endpoints), or a server context holding one certificate
/// chain (the mock servers; an intercepted tunnel's certificate for its host).
///
/// Client defaults are the secure ones: the system trust store (plus `ca_file`), host name
/// verification, TLS 1.2 or newer, ALPN `http/1.1`.
package final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    package let verifiesPeer: Bool
    package let isServer: Bool
    /// The newest resumable session per origin (`host:port`), each holding one reference.
    private let sessions = Locked<[String: SessionHandle]>([:])

    /// An `SSL_SESSION*` holding one reference; OpenSSL sessions are immutable once stored.
    private struct SessionHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    init(context: OpaquePointer, verifiesPeer: Bool, isServer: Bool) {
        self.context = context
        self.verifiesPeer = verifiesPeer
        self.isServer = isServer
    }

    deinit {
        self.sessions.withLock { sessions in
            for session in sessions.values { SSL_SESSION_free(session.pointer) }
        }
        SSL_CTX_free(self.context)
    }

    /// A client context: verify against the system store (and `caFile`, when given), unless
    /// `verify` is false; present `clientCertificate` to a server that asks for one.
    package static func client(
        caFile: String?,
        verify: Bool,
        clientCertificate: TLSClientCertificate? = nil
    ) throws(TLSConfigurationError) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSConfigurationError(description: "cannot create a TLS context: \(lastErrorString())")
        }
        _ = cos_ctx_set_min_tls12(context)
        _ = cos_ctx_set_modes(context)
        _ = cos_ctx_set_options(context)
        _ = cos_ctx_set_client_session_cache(context)
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        _ = alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count)) }
        if verify {
            SSL_CTX_set_default_verify_paths(context)
            if let caFile {
                ERR_clear_error()
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    SSL_CTX_free(context)
                    throw TLSConfigurationError(
                        description: "\(caFile): cannot load the CA bundle: \(lastErrorString())"
                    )
                }
            }
            SSL_CTX_set_verify(context, COS_SSL_VERIFY_PEER, nil)
        } else {
            SSL_CTX_set_verify(context, COS_SSL_VERIFY_NONE, nil)
        }
        Self.noteCertificateRequests(in: context)
        if let clientCertificate {
            do throws(TLSConfigurationError) {
                try Self.use(clientCertificate, in: context)
            } catch {
                SSL_CTX_free(context)
                throw error
            }
        }
        return TLSContext(context: context, verifiesPeer: verify, isServer: false)
    }

    /// A server context with a PEM certificate chain and key (the test and bench mock servers).
    package static func server(
        certificateChainFile: String,
        privateKeyFile: String
    ) throws(TLSConfigurationError) -> TLSContext {
        try Self.server { context throws(TLSConfigurationError) in
            ERR_clear_error()
            guard SSL_CTX_use_certificate_chain_file(context, certificateChainFile) == 1,
                SSL_CTX_use_PrivateKey_file(context, privateKeyFile, COS_SSL_FILETYPE_PEM) == 1
            else {
                throw TLSConfigurationError(
                    description: "\(certificateChainFile): cannot load the certificate or key: \(lastErrorString())"
                )
            }
        }
    }

    /// How many TLS 1.2 sessions (session IDs) each server context remembers. TLS 1.3 and clients
    /// with session tickets resume without server state; the cache bounds what old clients cost.
    static let serverSessionCacheSize = 1024

    /// A server context with the house's settings, whose certificate chain and key `installIdentity`
    /// puts in (from files, or from certificates made in memory): the one way a server context is made.
    ///
    /// TLS 1.2 or newer; ALPN selects `http/1.1`, or with `offersHTTP2` `h2` first and then
    /// `http/1.1`, whichever the client offers (a client offering only other protocols gets the
    /// no_application_protocol alert, RFC 7301 §3.2; a client offering none is served HTTP/1.1);
    /// sessions resume by ticket (OpenSSL's default, with a ticket key per context) and by session ID.
    package static func server(
        offersHTTP2: Bool = false,
        installIdentity: (OpaquePointer) throws(TLSConfigurationError) -> Void
    ) throws(TLSConfigurationError) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw TLSConfigurationError(description: "cannot create a TLS context: \(lastErrorString())")
        }
        _ = cos_ctx_set_min_tls12(context)
        _ = cos_ctx_set_modes(context)
        _ = cos_ctx_set_options(context)
        _ = cos_ctx_use_server_session_cache(context, Self.serverSessionCacheSize)
        // One TLS 1.3 ticket per handshake, not OpenSSL's two: a client resumes with one, and each
        // ticket is a session encoded, encrypted and sent (measured: new tunnels per CPU second).
        _ = SSL_CTX_set_num_tickets(context, 1)
        // AES-128-GCM first: as strong as TLS needs, and cheaper per record than AES-256 (OpenSSL's
        // default first choice) for the small records of API traffic.
        _ = SSL_CTX_set_ciphersuites(
            context,
            "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
        )
        _ = cos_ctx_prefer_server_ciphers(context)
        let sessionIDContext = Array("bearer-proxy".utf8)
        _ = SSL_CTX_set_session_id_context(context, sessionIDContext, UInt32(sessionIDContext.count))
        // The callback's argument says whether h2 is offered: no pointer is dereferenced.
        SSL_CTX_set_alpn_select_cb(context, selectALPN, offersHTTP2 ? UnsafeMutableRawPointer(bitPattern: 1) : nil)
        do throws(TLSConfigurationError) {
            try installIdentity(context)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        return TLSContext(context: context, verifiesPeer: false, isServer: true)
    }

    /// A TLS session in this context's role, ready to run over a stream connection's transport. For
    /// clients, `serverName` is sent as SNI (unless it is an IP address) and the certificate must
    /// match it; a cached session for `sessionKey` is offered for resumption.
    package func makeConnection(serverName: String?, sessionKey: String?) -> TLSConnection? {
        guard let ssl = SSL_new(self.context) else { return nil }
        if self.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName {
                let isIPAddress = SocketAddress(ipAddress: serverName, port: 0) != nil
                if isIPAddress {
                    if self.verifiesPeer { X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) }
                } else {
                    _ = cos_set_sni(ssl, serverName)
                    if self.verifiesPeer { SSL_set1_host(ssl, serverName) }
                }
            }
            if let sessionKey {
                // SSL_set_session takes its own reference, under the lock so the session cannot be freed meanwhile.
                self.sessions.withLock { sessions in
                    if let session = sessions[sessionKey] { SSL_set_session(ssl, session.pointer) }
                }
            }
        }
        return TLSConnection(ssl: ssl, context: self, sessionKey: self.isServer ? nil : sessionKey)
    }

    /// Keeps the connection's session for the next connection to the same origin.
    func storeSession(of ssl: OpaquePointer, key: String) {
        guard let session = SSL_get1_session(ssl) else { return }
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return
        }
        let handle = SessionHandle(pointer: session)
        self.sessions.withLock { sessions in
            if let previous = sessions[key] { SSL_SESSION_free(previous.pointer) }
            sessions[key] = handle
        }
    }
}

/// The ALPN select callback: with a non-nil `offersHTTP2`, `h2` when the client offers it; else
/// `http/1.1` when the client offers it; else the fatal no_application_protocol alert. The choice
/// points into the client's own list, which OpenSSL allows.
private func selectALPN(
    _ ssl: OpaquePointer?,
    _ selected: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ selectedLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: UInt32,
    _ offersHTTP2: UnsafeMutableRawPointer?
) -> Int32 {
    guard let offered, let selected, let selectedLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    let preferred: [StaticString] = offersHTTP2 == nil ? ["http/1.1"] : ["h2", "http/1.1"]
    let count = Int(offeredLength)
    for wanted in preferred {
        let name = UnsafeBufferPointer(start: wanted.utf8Start, count: wanted.utf8CodeUnitCount)
        var index = 0
        // Wire format (RFC 7301 §3.1): each protocol is a length byte and that many bytes.
        while index < count {
            let length = Int(offered[index])
            let start = index + 1
            guard start + length <= count else { break }
            if length == name.count && (0..<length).allSatisfy({ offered[start + $0] == name[$0] }) {
                selected.pointee = offered + start
                selectedLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            index = start + length
        }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}

/// The newest error on OpenSSL's queue for this thread, in OpenSSL's words.
func lastErrorString() -> String {
    let code = ERR_peek_last_error()
    guard code != 0, let text = ERR_reason_error_string(code) else { return "unknown error" }
    return String(cString: text)
}
