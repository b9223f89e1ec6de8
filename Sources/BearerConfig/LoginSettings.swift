import BearerHTTP

/// What `bearer-proxy login` needs beyond the token settings: where the user authorizes, and for
/// how long the command waits for them.
package struct LoginSettings: Equatable, Sendable {
    /// OAuth2 authorization endpoint: authorization code + PKCE with a loopback redirect (RFC 8252).
    package var authorizationURL: HTTPURL?
    /// OAuth2 device authorization endpoint (RFC 8628).
    package var deviceAuthorizationURL: HTTPURL?
    /// Port of the loopback redirect listener on 127.0.0.1; 0 picks a free one.
    package var redirectPort: Int = 0
    /// How long `bearer-proxy login` waits for the user before giving up.
    package var timeout: Duration = .seconds(300)

    package init() {}
}
