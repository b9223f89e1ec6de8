import BearerHTTP
import BearerIO

extension Configuration {
    /// Where `--check` and the start-up warning point a user who has no token yet.
    package static let keysThatAddAToken = "\(Key.accessToken), \(Key.tokenURL) or \(Key.tokenCommand)"
}

/// Settings that work, but surely not as meant or not safely: the proxy starts, `--check` prints
/// each (`Warning: proxy.conf:12: key: …`), and start-up logs each at warn.
extension SessionSettings {
    /// The keys of the OAuth2 token request (token_format = form): nothing reads them without token_url.
    static let tokenRequestKeys: [ConfigurationKey] = [
        .grantType, .clientID, .clientSecret, .clientAuth, .scope, .audience, .username, .password, .refreshToken,
        .refreshTokenFile, .clientKeyFile, .clientKeyID, .assertionIssuer, .assertionSubject, .resource,
    ]

    /// Verification off, placeholders left in, tokens in clear text, a port other machines reach.
    func warnAboutUnsafeSettings(process: ProcessSettings, into diagnostics: inout ConfigurationDiagnostics) {
        if process.tlsInsecureSkipVerify {
            diagnostics.warning(
                .tlsInsecureSkipVerify,
                "certificates and host names of upstreams, token endpoints and the session store are NOT verified:"
                    + " anyone on the network path can read the token (never in production)"
            )
        }
        for (key, url) in self.endpointURLs {
            if let domain = Configuration.placeholderDomain(url.host) {
                diagnostics.warning(
                    key,
                    "\(url.host) is a placeholder (\(domain) is reserved for documentation): put the real host here"
                )
            } else if !url.isHTTPS && !Configuration.isLoopback(url.host) && (key != .upstream || self.injectsUpstream)
            {
                diagnostics.warning(
                    key,
                    "http:// to \(url.host), which is not this machine: tokens cross the network unencrypted"
                        + " (use https://)"
                )
            }
        }
        if let store = process.sessionStore.endpoint {
            if let domain = Configuration.placeholderDomain(store.host) {
                diagnostics.warning(
                    .sessionStore,
                    "\(store.host) is a placeholder (\(domain) is reserved for documentation): put the real host here"
                )
            } else if !store.usesTLS && !Configuration.isLoopback(store.host) {
                diagnostics.warning(
                    .sessionStore,
                    "redis:// to \(store.host), which is not this machine: the session's tokens cross the network"
                        + " unencrypted (use rediss://)"
                )
            }
        }
        for (key, address) in self.listen.map({ (Key.listen, $0) })
            + (process.adminListen.map { [(Key.adminListen, $0)] } ?? [])
        {
            guard case .hostPort(let host, _) = address, !Configuration.isLoopback(host) else { continue }
            diagnostics.warning(
                key,
                "\(address) accepts connections from other machines: whoever reaches it spends your token"
                    + " (bind 127.0.0.1, or a unix: socket)"
            )
        }
    }

    /// Settings nothing reads as configured, and a proxy that adds no token at all.
    func warnAboutSettingsWithoutEffect(
        process: ProcessSettings,
        isUnusedDefault: Bool,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        let places = diagnostics.places
        let isSet = { (key: ConfigurationKey) in places[key] != nil }
        if self.tokenFormat == .form {
            if self.tokenURL == nil {
                let reason =
                    self.tokenCommand == nil
                    ? "is not used without \(Key.tokenURL) (nothing asks a token endpoint)"
                    : "is not used: \(Key.tokenCommand) gives the tokens"
                for key in Self.tokenRequestKeys where isSet(key) {
                    diagnostics.warning(key, reason)
                }
            } else {
                self.warnAboutUnusedGrantKeys(into: &diagnostics)
            }
            let loginKeys = [Key.authorizationURL, .deviceAuthorizationURL].filter(isSet)
            if let key = loginKeys.first, self.refreshTokenFile == nil {
                diagnostics.warning(
                    key,
                    "'bearer-proxy login' stores the refresh token in \(Key.refreshTokenFile): set it"
                )
            }
        }
        if process.sessionStore.endpoint == nil {
            for key in [Key.sessionName, .sessionStoreFallback] where isSet(key) {
                diagnostics.warning(key, "is not used without \(Key.sessionStore)")
            }
        }
        if let upstream = self.upstream, self.injectHosts != nil, !self.injectsUpstream {
            diagnostics.warning(
                .injectHosts,
                "does not match the upstream \(upstream.authority): origin-form requests go upstream without the"
                    + " token (add \(upstream.host))"
            )
        }
        // A default session left empty beside named ones is no mistake: it takes no requests.
        if self.accessToken == nil && !self.canRefresh && process.sessionStore.endpoint == nil && !isUnusedDefault {
            diagnostics.warning(
                nil,
                "no token source: requests are forwarded without an Authorization header (set \(Configuration.keysThatAddAToken))",
                alsoAt: [.upstream]
            )
        }
    }

    /// With token_url: keys the grant in force never sends.
    private func warnAboutUnusedGrantKeys(into diagnostics: inout ConfigurationDiagnostics) {
        let grant = self.effectiveGrantType
        if self.clientSecret != nil && self.clientID == nil {
            diagnostics.warning(.clientSecret, "is never sent without \(Key.clientID) (set the client it belongs to)")
        }
        var unused: [ConfigurationKey] = []
        if grant != .refreshToken { unused += [.refreshToken, .refreshTokenFile] }
        if grant != .password { unused += [.username, .password] }
        for key in unused where diagnostics.places[key] != nil {
            diagnostics.warning(key, "is not used by \(Key.grantType) = \(grant.rawValue)", alsoAt: [.grantType])
        }
    }

    /// The URL-valued keys that are set, in the order `--check` prints them.
    private var endpointURLs: [(key: ConfigurationKey, url: HTTPURL)] {
        let urls: [(ConfigurationKey, HTTPURL?)] = [
            (.upstream, self.upstream), (.tokenURL, self.tokenURL), (.revocationURL, self.revocationURL),
            (.loginURL, self.jsonBackend.loginURL), (.logoutURL, self.jsonBackend.logoutURL),
            (.authorizationURL, self.login.authorizationURL),
            (.deviceAuthorizationURL, self.login.deviceAuthorizationURL),
        ]
        return urls.compactMap { key, url in url.map { (key, $0) } }
    }

    /// Whether origin-form requests get the token.
    private var injectsUpstream: Bool {
        guard let upstream else { return false }
        return self.effectiveInjectHosts.contains { $0.matches(host: upstream.host, port: upstream.port) }
    }

}

extension Configuration {
    /// The reserved documentation name `host` falls under (RFC 2606, RFC 6761), if any.
    static func placeholderDomain(_ host: String) -> String? {
        let host = host.lowercased()
        for domain in ["example.com", "example.net", "example.org"] where host == domain || host.hasSuffix("." + domain)
        {
            return domain
        }
        for suffix in ["example", "invalid"] where host == suffix || host.hasSuffix("." + suffix) {
            return "." + suffix
        }
        return nil
    }

    /// localhost, 127.0.0.0/8 or ::1 (hosts come without brackets): traffic that never leaves this machine.
    package static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        guard case .ipv4 = SocketAddress(ipAddress: host, port: 0) else { return false }
        return host.hasPrefix("127.")
    }
}
