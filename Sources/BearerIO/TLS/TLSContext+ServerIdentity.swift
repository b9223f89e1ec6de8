import COpenSSL

extension TLSContext {
    /// How many TLS 1.2 sessions (session IDs) each server context remembers. TLS 1.3 and clients
    /// with session tickets resume without server state; the cache bounds what old clients cost.
    static let serverSessionCacheSize = 1024

    /// A server context presenting `certificate` followed by `chain` and proving it with `privateKey`,
    /// all from memory (the intercepting proxy's leaves: no key of theirs ever touches a file).
    ///
    /// TLS 1.2 or newer; ALPN selects `http/1.1` and nothing else (a client offering only other
    /// protocols, such as `h2` alone, gets the no_application_protocol alert, RFC 7301 §3.2; a client
    /// offering none is served HTTP/1.1); sessions resume by ticket (OpenSSL's default, with a ticket
    /// key per context) and by session ID. The pointers are borrowed: the context takes references of
    /// its own (`X509*` for the certificate and each chain member, `EVP_PKEY*` for the key).
    package static func server(
        certificate: OpaquePointer,
        chain: [OpaquePointer],
        privateKey: OpaquePointer
    ) throws(TLSConfigurationError) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw TLSConfigurationError(description: "cannot create a TLS context: \(lastErrorString())")
        }
        _ = cos_ctx_set_min_tls12(context)
        _ = cos_ctx_set_modes(context)
        _ = cos_ctx_set_options(context)
        _ = cos_ctx_use_server_session_cache(context, serverSessionCacheSize)
        let sessionIDContext = Array("bearer-proxy".utf8)
        _ = SSL_CTX_set_session_id_context(context, sessionIDContext, UInt32(sessionIDContext.count))
        SSL_CTX_set_alpn_select_cb(context, selectHTTP11, nil)
        ERR_clear_error()
        guard SSL_CTX_use_certificate(context, certificate) == 1,
            chain.allSatisfy({ cos_ctx_add1_chain_cert(context, $0) == 1 }),
            SSL_CTX_use_PrivateKey(context, privateKey) == 1,
            SSL_CTX_check_private_key(context) == 1
        else {
            let reason = lastErrorString()
            SSL_CTX_free(context)
            throw TLSConfigurationError(description: "cannot use the certificate or key: \(reason)")
        }
        return TLSContext(context: context, verifiesPeer: false, isServer: true)
    }
}

/// The ALPN select callback: `http/1.1` when the client offers it (pointing into the client's own
/// list, which OpenSSL allows), else the fatal no_application_protocol alert.
private func selectHTTP11(
    _ ssl: OpaquePointer?,
    _ selected: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ selectedLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: UInt32,
    _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let offered, let selected, let selectedLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    let http11: [UInt8] = Array("http/1.1".utf8)
    var index = 0
    let count = Int(offeredLength)
    // Wire format (RFC 7301 §3.1): each protocol is a length byte and that many bytes.
    while index < count {
        let length = Int(offered[index])
        let start = index + 1
        guard start + length <= count else { break }
        if length == http11.count && (0..<length).allSatisfy({ offered[start + $0] == http11[$0] }) {
            selected.pointee = offered + start
            selectedLength.pointee = UInt8(length)
            return SSL_TLSEXT_ERR_OK
        }
        index = start + length
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}
