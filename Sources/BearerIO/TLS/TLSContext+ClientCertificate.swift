import COpenSSL

/// Mutual TLS (RFC 8705): the client's certificate, and the server side that asks for one (the
/// tests' mock servers).
extension TLSContext {
    /// Presents `certificate` (leaf and chain) whenever a server asks for one.
    static func use(_ certificate: TLSClientCertificate, in context: OpaquePointer) throws(TLSConfigurationError) {
        ERR_clear_error()
        guard SSL_CTX_use_certificate(context, certificate.chain[0]) == 1,
            SSL_CTX_use_PrivateKey(context, certificate.key.pointer) == 1
        else {
            throw TLSConfigurationError(
                description: "\(certificate.certificateFile): cannot use the client certificate: \(lastErrorString())"
            )
        }
        for intermediate in certificate.chain.dropFirst() {
            // SSL_CTX_add1_chain_cert, a macro: the context takes its own reference.
            guard SSL_CTX_ctrl(context, SSL_CTRL_CHAIN_CERT, 1, UnsafeMutableRawPointer(intermediate)) == 1 else {
                throw TLSConfigurationError(
                    description:
                        "\(certificate.certificateFile): cannot use the certificate chain: \(lastErrorString())"
                )
            }
        }
    }

    /// Notes on each connection whether its server asked for a client certificate, so that the
    /// failure that follows can say so rather than "reset" (see `TLSConnection+ClientCertificate`).
    static func noteCertificateRequests(in context: OpaquePointer) {
        // A client's cert_cb runs when the server's CertificateRequest arrives, and only then, whether
        // a certificate is configured or not; returning 1 goes on with what is configured.
        SSL_CTX_set_cert_cb(
            context,
            { ssl, _ in
                SSL_set_ex_data(ssl, TLSConnection.certificateRequestedIndex, UnsafeMutableRawPointer(bitPattern: 1))
                return 1
            },
            nil
        )
    }

    /// Whether connections of this context present a client certificate.
    package var presentsClientCertificate: Bool {
        SSL_CTX_get0_certificate(self.context) != nil
    }

    /// A server context that asks every client for a certificate issued by a CA in `clientCAFile`,
    /// and refuses one without (`required`) or with another (the tests' mTLS servers).
    package static func server(
        certificateChainFile: String,
        privateKeyFile: String,
        clientCertificatesFrom clientCAFile: String,
        required: Bool = true
    ) throws(TLSConfigurationError) -> TLSContext {
        let server = try Self.server(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile)
        ERR_clear_error()
        guard SSL_CTX_load_verify_locations(server.context, clientCAFile, nil) == 1,
            let names = SSL_load_client_CA_file(clientCAFile)
        else {
            throw TLSConfigurationError(description: "\(clientCAFile): cannot load the client CA: \(lastErrorString())")
        }
        SSL_CTX_set_client_CA_list(server.context, names)
        SSL_CTX_set_verify(server.context, SSL_VERIFY_PEER | (required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), nil)
        return server
    }
}
