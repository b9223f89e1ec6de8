import BearerIO

/// Presents the TLS client certificate (RFC 8705) only to the servers it is for: the upstream, the
/// inject hosts, and the token, revocation, device and login endpoints. Another `https://` host a
/// client names through the proxy is reached without it: a certificate names its holder, and no
/// other server needs to learn who that is.
///
/// Chosen by host name (any port), as `serverName` is the host a connection is made to.
struct ClientCertificateSelector: TLSConnectionFactory {
    let presenting: TLSContext
    let withoutCertificate: TLSContext
    let hosts: [HostPattern]

    func makeConnection(serverName: String?, sessionKey: String?) -> TLSConnection? {
        let presents = serverName.map { self.presents(to: $0) } ?? false
        return (presents ? self.presenting : self.withoutCertificate).makeConnection(
            serverName: serverName,
            sessionKey: sessionKey
        )
    }

    func presents(to host: String) -> Bool {
        self.hosts.contains { pattern in
            switch pattern {
            case .host(let name), .hostAndPort(let name, _): name == host
            case .subdomains: pattern.matches(host: host, port: 0)
            }
        }
    }
}

extension Configuration {
    /// The TLS of every outbound connection: trust from ca_file (or none with
    /// tls_insecure_skip_verify), and with tls_client_cert the client certificate, for the hosts it
    /// is for (`ClientCertificateSelector`).
    package func outboundTLS() throws(TLSConfigurationError) -> any TLSConnectionFactory {
        let plain = try TLSContext.client(caFile: self.caFile, verify: !self.tlsInsecureSkipVerify)
        guard let certificate = self.credentials.tlsCertificate else { return plain }
        let presenting = try TLSContext.client(
            caFile: self.caFile,
            verify: !self.tlsInsecureSkipVerify,
            clientCertificate: certificate
        )
        return ClientCertificateSelector(
            presenting: presenting,
            withoutCertificate: plain,
            hosts: self.hostsThatSeeTheClientCertificate
        )
    }

    /// The upstream's host, the inject hosts, and every endpoint the proxy or `login` calls.
    var hostsThatSeeTheClientCertificate: [HostPattern] {
        let endpoints = [
            self.upstream, self.tokenURL, self.revocationURL, self.login.deviceAuthorizationURL,
            self.jsonBackend.loginURL, self.jsonBackend.logoutURL,
        ]
        return self.effectiveInjectHosts + endpoints.compactMap { $0.map { .host($0.host) } }
    }
}
