import BearerConfig
import BearerHTTP
import BearerIO

/// Presents the TLS client certificate (RFC 8705) only to the servers it is for: the upstream, the
/// inject hosts, and the token, revocation, device and login endpoints. Another `https://` host a
/// client names through the proxy is reached without it: a certificate names its holder, and no
/// other server needs to learn who that is. With named sessions, each session's certificate goes to
/// that session's servers.
///
/// Chosen by host name (any port), as `serverName` is the host a connection is made to.
struct ClientCertificateSelector: TLSConnectionFactory {
    /// A certificate, and the hosts it is presented to.
    struct Choice: Sendable {
        let presenting: TLSContext
        let hosts: [HostPattern]
    }

    /// The first whose hosts name the server is used.
    let choices: [Choice]
    let withoutCertificate: TLSContext

    init(choices: [Choice], withoutCertificate: TLSContext) {
        self.choices = choices
        self.withoutCertificate = withoutCertificate
    }

    init(presenting: TLSContext, withoutCertificate: TLSContext, hosts: [HostPattern]) {
        self.init(choices: [Choice(presenting: presenting, hosts: hosts)], withoutCertificate: withoutCertificate)
    }

    func makeConnection(serverName: String?, sessionKey: String?) -> TLSConnection? {
        let context = serverName.flatMap(self.certificate(for:)) ?? self.withoutCertificate
        return context.makeConnection(serverName: serverName, sessionKey: sessionKey)
    }

    func presents(to host: String) -> Bool {
        self.certificate(for: host) != nil
    }

    private func certificate(for host: String) -> TLSContext? {
        self.choices.first { Self.names(host, in: $0.hosts) }?.presenting
    }

    private static func names(_ host: String, in hosts: [HostPattern]) -> Bool {
        hosts.contains { pattern in
            switch pattern {
            case .host(let name), .hostAndPort(let name, _): name == host
            case .subdomains: pattern.matches(host: host, port: 0)
            }
        }
    }
}

extension ProcessSettings {
    /// The TLS of `session`'s outbound connections (its token, login and revocation endpoints, and
    /// `login`/`logout`): trust from ca_file (or none with tls_insecure_skip_verify), and with
    /// tls_client_cert the client certificate, for the hosts it is for (`ClientCertificateSelector`).
    package func outboundTLS(
        for session: SessionSettings,
        presenting certificate: TLSClientCertificate?
    ) throws(TLSConfigurationError) -> any TLSConnectionFactory {
        try self.outboundTLS(presenting: [(session, certificate)])
    }

    /// The TLS of the upstream connections, which serve every session: each session's client
    /// certificate to that session's hosts. Trust is the process's (ca_file, tls_insecure_skip_verify).
    package func outboundTLS(
        presenting sessions: [(SessionSettings, TLSClientCertificate?)]
    ) throws(TLSConfigurationError) -> any TLSConnectionFactory {
        let plain = try TLSContext.client(caFile: self.caFile, verify: !self.tlsInsecureSkipVerify)
        var choices: [ClientCertificateSelector.Choice] = []
        for (session, certificate) in sessions {
            guard let certificate else { continue }
            let presenting = try TLSContext.client(
                caFile: self.caFile,
                verify: !self.tlsInsecureSkipVerify,
                clientCertificate: certificate
            )
            choices.append(.init(presenting: presenting, hosts: session.hostsThatSeeTheClientCertificate))
        }
        return choices.isEmpty ? plain : ClientCertificateSelector(choices: choices, withoutCertificate: plain)
    }
}

extension SessionSettings {
    /// The upstream's host, the inject hosts, and every endpoint the proxy or `login` calls.
    var hostsThatSeeTheClientCertificate: [HostPattern] {
        let endpoints = [
            self.upstream, self.tokenURL, self.revocationURL, self.login.deviceAuthorizationURL,
            self.jsonBackend.loginURL, self.jsonBackend.logoutURL,
        ]
        return self.effectiveInjectHosts + endpoints.compactMap { $0.map { .host($0.host) } }
    }
}
