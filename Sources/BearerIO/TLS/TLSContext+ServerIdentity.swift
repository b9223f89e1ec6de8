import COpenSSL

extension TLSContext {
    /// A server context presenting `certificate` followed by `chain` and proving it with `privateKey`,
    /// all from memory (the intercepting proxy's leaves: no key of theirs ever touches a file), with
    /// the settings every server context has (`server(installIdentity:)`). The pointers are borrowed:
    /// the context takes references of its own (`X509*` for the certificate and each chain member,
    /// `EVP_PKEY*` for the key). `offersHTTP2`: ALPN selects `h2` before `http/1.1`.
    package static func server(
        certificate: OpaquePointer,
        chain: [OpaquePointer],
        privateKey: OpaquePointer,
        offersHTTP2: Bool = false
    ) throws(TLSConfigurationError) -> TLSContext {
        try Self.server(offersHTTP2: offersHTTP2) { context throws(TLSConfigurationError) in
            ERR_clear_error()
            guard SSL_CTX_use_certificate(context, certificate) == 1,
                chain.allSatisfy({ cos_ctx_add1_chain_cert(context, $0) == 1 }),
                SSL_CTX_use_PrivateKey(context, privateKey) == 1,
                SSL_CTX_check_private_key(context) == 1
            else {
                throw TLSConfigurationError(description: "cannot use the certificate or key: \(lastErrorString())")
            }
        }
    }
}
