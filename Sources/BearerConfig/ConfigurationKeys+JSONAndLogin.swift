import BearerHTTP

extension ConfigurationKey {
    // The keys of JSON backends (token_format = json) and of `bearer-proxy login`.

    package static let tokenFormat = choiceKey(
        "token_format",
        \SessionSettings.tokenFormat,
        expected: "form or json"
    )
    package static let tokenBody = templateKey("token_body", \.jsonBackend.tokenBody, default: .defaultTokenBody)
    package static let loginURL = urlKey(
        "login_url",
        example: "https://api.example.com/api/auth/login",
        \SessionSettings.jsonBackend.loginURL
    )
    package static let loginBody = templateKey("login_body", \.jsonBackend.loginBody, default: .defaultLoginBody)
    package static let logoutURL = urlKey(
        "logout_url",
        example: "https://api.example.com/api/auth/logout",
        \SessionSettings.jsonBackend.logoutURL
    )
    package static let tokenField = fieldKey("token_field", \.jsonBackend.fields.token)
    package static let refreshTokenField = fieldKey("refresh_token_field", \.jsonBackend.fields.refreshToken)
    package static let expiresField = fieldKey("expires_field", \.jsonBackend.fields.expires)
    package static let authorizationURL = urlKey(
        "authorization_url",
        example: "https://auth.example.com/oauth/authorize",
        \SessionSettings.login.authorizationURL
    )
    package static let deviceAuthorizationURL = urlKey(
        "device_authorization_url",
        example: "https://auth.example.com/oauth/device/code",
        \SessionSettings.login.deviceAuthorizationURL
    )
    package static let redirectPort = ConfigurationKey(
        "redirect_port",
        of: SessionSettings.self,
        show: { "\($0.login.redirectPort)" }
    ) {
        value,
        session in
        guard let port = Int(value), (0...65535).contains(port) else {
            return "expected a port from 0 to 65535 (0: any free port), got '\(value)'"
        }
        session.login.redirectPort = port
        return nil
    }
    package static let loginTimeout = durationKey("login_timeout", \SessionSettings.login.timeout)

    /// A JSON template; `--check` shows it with literal string values masked (they may be secrets).
    static func templateKey(
        _ name: String,
        _ path: WritableKeyPath<SessionSettings, JSONTemplate?> & Sendable,
        default defaultTemplate: JSONTemplate
    ) -> ConfigurationKey {
        ConfigurationKey(
            name,
            of: SessionSettings.self,
            carriesSecrets: true,
            show: { $0.tokenFormat == .json ? ($0[keyPath: path] ?? defaultTemplate).maskedDescription : nil }
        ) { value, session in
            switch JSONTemplate.parse(value) {
            case .success(let template):
                session[keyPath: path] = template
                return nil
            case .failure(let error):
                return error.description
            }
        }
    }

    static func fieldKey(
        _ name: String,
        _ path: WritableKeyPath<SessionSettings, JSONFieldPath?> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(
            name,
            of: SessionSettings.self,
            show: { $0.tokenFormat == .json ? ($0[keyPath: path]?.description ?? "(searched by name)") : nil }
        ) { value, session in
            guard let field = JSONFieldPath(value) else {
                return "invalid field path '\(value)' (expected names joined by dots, e.g. data.accessToken)"
            }
            session[keyPath: path] = field
            return nil
        }
    }
}

extension SessionSettings {
    /// Checks the JSON backend and login settings against each other and against the grant.
    func validateJSONAndLogin(into diagnostics: inout ConfigurationDiagnostics) {
        let (form, json) = (TokenFormat.form.rawValue, TokenFormat.json.rawValue)
        switch self.tokenFormat {
        case .form:
            if let key = self.jsonBackend.namesJSONOnlyKey {
                diagnostics.error(key, "applies to \(Key.tokenFormat) = \(json)")
            }
            let loginKey =
                self.login.authorizationURL != nil
                ? Key.authorizationURL : (self.login.deviceAuthorizationURL != nil ? Key.deviceAuthorizationURL : nil)
            if let loginKey, self.tokenURL == nil || self.clientID == nil {
                diagnostics.error(
                    loginKey,
                    "needs \(Key.tokenURL) (where the code is exchanged for tokens) and \(Key.clientID)"
                )
            }
        case .json:
            let backend = self.jsonBackend
            if self.tokenCommand != nil {
                diagnostics.error(.tokenCommand, "cannot be combined with \(Key.tokenFormat) = \(json)")
            }
            if self.revocationURL != nil {
                diagnostics.error(
                    .revocationURL,
                    "applies to \(Key.tokenFormat) = \(form) (a JSON backend logs out at \(Key.logoutURL))"
                )
            }
            for (key, url) in [
                (Key.authorizationURL, self.login.authorizationURL),
                (Key.deviceAuthorizationURL, self.login.deviceAuthorizationURL),
            ] where url != nil {
                diagnostics.error(
                    key,
                    "applies to \(Key.tokenFormat) = \(form) (a JSON backend logs in at \(Key.loginURL))"
                )
            }
            if self.tokenURL == nil && backend.loginURL == nil {
                diagnostics.error(
                    .tokenFormat,
                    "\(json) needs \(Key.tokenURL) (the refresh endpoint), \(Key.loginURL), or both"
                )
            }
            for (key, template, askable) in [
                (Key.tokenBody, backend.effectiveTokenBody, [Key.refreshToken.name]),
                (Key.loginBody, backend.effectiveLoginBody, [Key.username.name, Key.password.name]),
            ] {
                if let name = template.placeholders.first(where: { !askable.contains($0) && !self.hasValue(for: $0) }) {
                    diagnostics.error(key, "uses {{\(name)}} but \(name) is not set", alsoAt: [.tokenFormat])
                }
            }
            let hasRefreshToken = self.refreshToken != nil || self.refreshTokenFile != nil
            if self.tokenURL != nil && !hasRefreshToken && backend.loginURL == nil {
                diagnostics.error(
                    .tokenURL,
                    "a JSON refresh needs \(Key.refreshToken) or \(Key.refreshTokenFile) (or \(Key.loginURL))"
                )
            }
            if backend.loginURL != nil && !self.canLogInUnattended && !hasRefreshToken {
                diagnostics.error(
                    .loginURL,
                    "\(Key.loginBody) needs \(Key.username) and \(Key.password): set them, or set \(Key.refreshTokenFile) and fill it with 'bearer-proxy login'"
                )
            }
        }
    }

    /// Whether a template placeholder has a value in the configuration.
    func hasValue(for placeholder: String) -> Bool {
        self.templateValue(for: placeholder) != nil
            || (placeholder == Key.refreshToken.name && self.refreshTokenFile != nil)
    }

    /// The configured value of a template placeholder, which names its key (refresh_token: the
    /// inline one only).
    package func templateValue(for placeholder: String) -> String? {
        switch placeholder {
        case Key.refreshToken.name: self.refreshToken?.reveal()
        case Key.username.name: self.username
        case Key.password.name: self.password?.reveal()
        case Key.clientID.name: self.clientID
        case Key.clientSecret.name: self.clientSecret?.reveal()
        case Key.scope.name: self.scope
        default: nil
        }
    }

    /// Whether the proxy can log in at login_url by itself: every value login_body names is configured.
    package var canLogInUnattended: Bool {
        self.jsonBackend.loginURL != nil
            && self.jsonBackend.effectiveLoginBody.placeholders.allSatisfy {
                $0 != Key.refreshToken.name && self.hasValue(for: $0)
            }
    }
}
