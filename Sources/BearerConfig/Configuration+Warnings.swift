import BearerHTTP
import BearerIO

/// Settings that work, but surely not as meant or not safely: the proxy starts, `--check` prints
/// each (`Warning: proxy.conf:12: key: …`), and start-up logs each at warn.
extension Configuration {
    /// Where `--check` and the start-up warning point a user who has no token yet.
    package static let keysThatAddAToken = "access_token, token_url or token_command"

    /// The keys of the OAuth2 token request (token_format = form): nothing reads them without token_url.
    static let tokenRequestKeys = [
        "grant_type", "client_id", "client_secret", "client_auth", "scope", "audience", "username", "password",
        "refresh_token", "refresh_token_file", "client_key_file", "client_key_id", "assertion_issuer",
        "assertion_subject", "resource",
    ]

    /// Verification off, placeholders left in, tokens in clear text, a port other machines reach.
    func warnAboutUnsafeSettings(into diagnostics: inout ConfigurationDiagnostics) {
        if self.tlsInsecureSkipVerify {
            diagnostics.warning(
                "tls_insecure_skip_verify",
                "certificates and host names of upstreams, token endpoints and the session store are NOT verified:"
                    + " anyone on the network path can read the token (never in production)"
            )
        }
        for (key, url) in self.endpointURLs {
            if let domain = Self.placeholderDomain(url.host) {
                diagnostics.warning(
                    key,
                    "\(url.host) is a placeholder (\(domain) is reserved for documentation): put the real host here"
                )
            } else if !url.isHTTPS && !Self.isLoopback(url.host) && (key != "upstream" || self.injectsUpstream) {
                diagnostics.warning(
                    key,
                    "http:// to \(url.host), which is not this machine: tokens cross the network unencrypted"
                        + " (use https://)"
                )
            }
        }
        if let store = self.sessionStore.endpoint {
            if let domain = Self.placeholderDomain(store.host) {
                diagnostics.warning(
                    "session_store",
                    "\(store.host) is a placeholder (\(domain) is reserved for documentation): put the real host here"
                )
            } else if !store.usesTLS && !Self.isLoopback(store.host) {
                diagnostics.warning(
                    "session_store",
                    "redis:// to \(store.host), which is not this machine: the session's tokens cross the network"
                        + " unencrypted (use rediss://)"
                )
            }
        }
        for (key, address) in self.listen.map({ ("listen", $0) })
            + (self.adminListen.map { [("admin_listen", $0)] } ?? [])
        {
            guard case .hostPort(let host, _) = address, !Self.isLoopback(host) else { continue }
            diagnostics.warning(
                key,
                "\(address) accepts connections from other machines: whoever reaches it spends your token"
                    + " (bind 127.0.0.1, or a unix: socket)"
            )
        }
    }

    /// Settings nothing reads as configured, and a proxy that adds no token at all.
    func warnAboutSettingsWithoutEffect(into diagnostics: inout ConfigurationDiagnostics) {
        let setKeys = self.settingPlaces.byKey.keys
        if self.tokenFormat == .form {
            if self.tokenURL == nil {
                let reason =
                    self.tokenCommand == nil
                    ? "is not used without token_url (nothing asks a token endpoint)"
                    : "is not used: token_command gives the tokens"
                for key in Self.tokenRequestKeys where setKeys.contains(key) {
                    diagnostics.warning(key, reason)
                }
            } else {
                self.warnAboutUnusedGrantKeys(into: &diagnostics)
            }
            let loginKeys = ["authorization_url", "device_authorization_url"].filter(setKeys.contains)
            if let key = loginKeys.first, self.refreshTokenFile == nil {
                diagnostics.warning(
                    key,
                    "'bearer-proxy login' stores the refresh token in refresh_token_file: set it"
                )
            }
        }
        if self.sessionStore.endpoint == nil {
            for key in ["session_name", "session_store_fallback"] where setKeys.contains(key) {
                diagnostics.warning(key, "is not used without session_store")
            }
        }
        if let upstream = self.upstream, self.injectHosts != nil, !self.injectsUpstream {
            diagnostics.warning(
                "inject_hosts",
                "does not match the upstream \(upstream.authority): origin-form requests go upstream without the"
                    + " token (add \(upstream.host))"
            )
        }
        // A default session left empty beside named ones is no mistake: it takes no requests.
        let isUnused = !self.hasDefaultSession && !self.sessions.isEmpty
        if self.accessToken == nil && !self.canRefresh && self.sessionStore.endpoint == nil && !isUnused {
            diagnostics.warning(
                nil,
                "no token source: requests are forwarded without an Authorization header (set \(Self.keysThatAddAToken))",
                alsoAt: ["upstream"]
            )
        }
    }

    /// With token_url: keys the grant in force never sends.
    private func warnAboutUnusedGrantKeys(into diagnostics: inout ConfigurationDiagnostics) {
        let grant = self.effectiveGrantType
        if self.clientSecret != nil && self.clientID == nil {
            diagnostics.warning("client_secret", "is never sent without client_id (set the client it belongs to)")
        }
        var unused: [String] = []
        if grant != .refreshToken { unused += ["refresh_token", "refresh_token_file"] }
        if grant != .password { unused += ["username", "password"] }
        for key in unused where self.settingPlaces.byKey[key] != nil {
            diagnostics.warning(key, "is not used by grant_type = \(grant.rawValue)", alsoAt: ["grant_type"])
        }
    }

    /// The URL-valued keys that are set, in the order `--check` prints them.
    private var endpointURLs: [(key: String, url: HTTPURL)] {
        let urls: [(String, HTTPURL?)] = [
            ("upstream", self.upstream), ("token_url", self.tokenURL), ("revocation_url", self.revocationURL),
            ("login_url", self.jsonBackend.loginURL), ("logout_url", self.jsonBackend.logoutURL),
            ("authorization_url", self.login.authorizationURL),
            ("device_authorization_url", self.login.deviceAuthorizationURL),
        ]
        return urls.compactMap { key, url in url.map { (key, $0) } }
    }

    /// Whether origin-form requests get the token.
    private var injectsUpstream: Bool {
        guard let upstream else { return false }
        return self.effectiveInjectHosts.contains { $0.matches(host: upstream.host, port: upstream.port) }
    }

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
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        guard case .ipv4 = SocketAddress(ipAddress: host, port: 0) else { return false }
        return host.hasPrefix("127.")
    }
}
