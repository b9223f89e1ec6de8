import BearerHTTP

/// How token_url is spoken to.
package enum TokenFormat: String, Equatable, Sendable {
    /// RFC 6749: a form post, an OAuth2 JSON answer.
    case form
    /// An app backend's own JSON endpoints: JSON bodies from templates, answers read by field paths.
    case json
}

/// The settings of a JSON backend (token_format = json): refresh with `token_body` at token_url,
/// log in with `login_body` at `login_url`, log out at `logout_url`.
package struct JSONBackendSettings: Equatable, Sendable {
    /// Nil: the default, `{"refresh_token": "{{refresh_token}}"}`.
    package var tokenBody: JSONTemplate?
    package var loginURL: HTTPURL?
    /// Nil: the default, `{"username": "{{username}}", "password": "{{password}}"}`.
    package var loginBody: JSONTemplate?
    package var logoutURL: HTTPURL?
    package var fields = JSONTokenFields()

    package init() {}

    package var effectiveTokenBody: JSONTemplate { self.tokenBody ?? .defaultTokenBody }
    package var effectiveLoginBody: JSONTemplate { self.loginBody ?? .defaultLoginBody }

    /// The first JSON-only key that is set (they make no sense with token_format = form).
    var namesJSONOnlyKey: ConfigurationKey? {
        if self.tokenBody != nil { return .tokenBody }
        if self.loginURL != nil { return .loginURL }
        if self.loginBody != nil { return .loginBody }
        if self.logoutURL != nil { return .logoutURL }
        if self.fields.token != nil { return .tokenField }
        if self.fields.refreshToken != nil { return .refreshTokenField }
        if self.fields.expires != nil { return .expiresField }
        return nil
    }
}
