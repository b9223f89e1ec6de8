import BearerHTTP

extension Configuration {
    /// The keys of JSON backends (token_format = json) and of `bearer-proxy login`.
    static let jsonAndLoginKeys: [ConfigurationKey] = [
        ConfigurationKey("token_format", scope: .session, show: { $0.tokenFormat.rawValue }) { value, config in
            guard let format = TokenFormat(rawValue: value) else { return "expected form or json, got '\(value)'" }
            config.tokenFormat = format
            return nil
        },
        templateKey("token_body", scope: .session, \.jsonBackend.tokenBody, default: .defaultTokenBody),
        urlKey("login_url", scope: .session, example: "https://api.example.com/api/auth/login", \.jsonBackend.loginURL),
        templateKey("login_body", scope: .session, \.jsonBackend.loginBody, default: .defaultLoginBody),
        urlKey(
            "logout_url",
            scope: .session,
            example: "https://api.example.com/api/auth/logout",
            \.jsonBackend.logoutURL
        ),
        fieldKey("token_field", scope: .session, \.jsonBackend.fields.token),
        fieldKey("refresh_token_field", scope: .session, \.jsonBackend.fields.refreshToken),
        fieldKey("expires_field", scope: .session, \.jsonBackend.fields.expires),
        urlKey(
            "authorization_url",
            scope: .session,
            example: "https://auth.example.com/oauth/authorize",
            \.login.authorizationURL
        ),
        urlKey(
            "device_authorization_url",
            scope: .session,
            example: "https://auth.example.com/oauth/device/code",
            \.login.deviceAuthorizationURL
        ),
        ConfigurationKey("redirect_port", scope: .session, show: { "\($0.login.redirectPort)" }) { value, config in
            guard let port = Int(value), (0...65535).contains(port) else {
                return "expected a port from 0 to 65535 (0: any free port), got '\(value)'"
            }
            config.login.redirectPort = port
            return nil
        },
        durationKey("login_timeout", scope: .session, \.login.timeout),
    ]

    static func urlKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        example: String,
        _ path: WritableKeyPath<Configuration, HTTPURL?> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(name, scope: scope, show: { $0[keyPath: path]?.description }) { value, config in
            switch HTTPURL.parse(value) {
            case .success(let url):
                config[keyPath: path] = url
                return nil
            case .failure(let error):
                return "'\(HTTPURL.quotable(value))' \(error.reason) (expected e.g. \(example))"
            }
        }
    }

    /// A JSON template; `--check` shows it with literal string values masked (they may be secrets).
    static func templateKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        _ path: WritableKeyPath<Configuration, JSONTemplate?> & Sendable,
        default defaultTemplate: JSONTemplate
    ) -> ConfigurationKey {
        ConfigurationKey(
            name,
            scope: scope,
            carriesSecrets: true,
            show: { $0.tokenFormat == .json ? ($0[keyPath: path] ?? defaultTemplate).maskedDescription : nil }
        ) { value, config in
            switch JSONTemplate.parse(value) {
            case .success(let template):
                config[keyPath: path] = template
                return nil
            case .failure(let error):
                return error.description
            }
        }
    }

    static func fieldKey(
        _ name: String,
        scope: ConfigurationKey.Scope = .process,
        _ path: WritableKeyPath<Configuration, JSONFieldPath?> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(
            name,
            scope: scope,
            show: { $0.tokenFormat == .json ? ($0[keyPath: path]?.description ?? "(searched by name)") : nil }
        ) { value, config in
            guard let field = JSONFieldPath(value) else {
                return "invalid field path '\(value)' (expected names joined by dots, e.g. data.accessToken)"
            }
            config[keyPath: path] = field
            return nil
        }
    }

    /// Checks the JSON backend and login settings against each other and against the grant.
    func validateJSONAndLogin(into diagnostics: inout ConfigurationDiagnostics) {
        switch self.tokenFormat {
        case .form:
            if let key = self.jsonBackend.namesJSONOnlyKey {
                diagnostics.error(key, "applies to token_format = json")
            }
            let loginKey =
                self.login.authorizationURL != nil
                ? "authorization_url" : (self.login.deviceAuthorizationURL != nil ? "device_authorization_url" : nil)
            if let loginKey, self.tokenURL == nil || self.clientID == nil {
                diagnostics.error(loginKey, "needs token_url (where the code is exchanged for tokens) and client_id")
            }
        case .json:
            let backend = self.jsonBackend
            if self.tokenCommand != nil {
                diagnostics.error("token_command", "cannot be combined with token_format = json")
            }
            if self.revocationURL != nil {
                diagnostics.error(
                    "revocation_url",
                    "applies to token_format = form (a JSON backend logs out at logout_url)"
                )
            }
            for key in ["authorization_url", "device_authorization_url"] {
                let isSet = key == "authorization_url" ? self.login.authorizationURL : self.login.deviceAuthorizationURL
                if isSet != nil {
                    diagnostics.error(key, "applies to token_format = form (a JSON backend logs in at login_url)")
                }
            }
            if self.tokenURL == nil && backend.loginURL == nil {
                diagnostics.error("token_format", "json needs token_url (the refresh endpoint), login_url, or both")
            }
            for (key, template, askable) in [
                ("token_body", backend.effectiveTokenBody, ["refresh_token"]),
                ("login_body", backend.effectiveLoginBody, ["username", "password"]),
            ] {
                if let name = template.placeholders.first(where: { !askable.contains($0) && !self.hasValue(for: $0) }) {
                    diagnostics.error(key, "uses {{\(name)}} but \(name) is not set", alsoAt: ["token_format"])
                }
            }
            let hasRefreshToken = self.refreshToken != nil || self.refreshTokenFile != nil
            if self.tokenURL != nil && !hasRefreshToken && backend.loginURL == nil {
                diagnostics.error(
                    "token_url",
                    "a JSON refresh needs refresh_token or refresh_token_file (or login_url)"
                )
            }
            if backend.loginURL != nil && !self.canLogInUnattended && !hasRefreshToken {
                diagnostics.error(
                    "login_url",
                    "login_body needs username and password: set them, or set refresh_token_file and fill it with 'bearer-proxy login'"
                )
            }
        }
    }

    /// Whether a template placeholder has a value in the configuration.
    func hasValue(for placeholder: String) -> Bool {
        self.templateValue(for: placeholder) != nil || (placeholder == "refresh_token" && self.refreshTokenFile != nil)
    }

    /// The configured value of a template placeholder (refresh_token: the inline one only).
    package func templateValue(for placeholder: String) -> String? {
        switch placeholder {
        case "refresh_token": self.refreshToken?.reveal()
        case "username": self.username
        case "password": self.password?.reveal()
        case "client_id": self.clientID
        case "client_secret": self.clientSecret?.reveal()
        case "scope": self.scope
        default: nil
        }
    }

    /// Whether the proxy can log in at login_url by itself: every value login_body names is configured.
    package var canLogInUnattended: Bool {
        self.jsonBackend.loginURL != nil
            && self.jsonBackend.effectiveLoginBody.placeholders.allSatisfy {
                $0 != "refresh_token" && self.hasValue(for: $0)
            }
    }
}
