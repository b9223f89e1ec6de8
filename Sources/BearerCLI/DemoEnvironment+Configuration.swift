import BearerConfig
import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerProxy

extension DemoEnvironment {
    /// Points the proxy's token settings at the demo's token server: OAuth2 client_credentials, or
    /// (`--demo json`) a JSON backend where the proxy logs in with the demo user and then refreshes.
    func configureTokens(_ configuration: inout Configuration) {
        switch self.backend {
        case .oauth2:
            configuration.tokenURL = try? HTTPURL.parse(self.tokenServer.url).get()
            configuration.grantType = .clientCredentials
            configuration.clientID = Self.clientID
            configuration.clientSecret = Secret(Self.clientSecret)
        case .json:
            configuration.tokenFormat = .json
            configuration.tokenURL = try? HTTPURL.parse(self.tokenServer.jsonRefreshURL).get()
            configuration.jsonBackend.loginURL = try? HTTPURL.parse(self.tokenServer.jsonLoginURL).get()
            configuration.jsonBackend.logoutURL = try? HTTPURL.parse(self.tokenServer.jsonLogoutURL).get()
            configuration.jsonBackend.tokenBody = try? JSONTemplate.parse(#"{"refreshToken": "{{refresh_token}}"}"#)
                .get()
            configuration.username = Self.username
            configuration.password = Secret(Self.password)
        }
    }

    /// What to try, printed once the proxy listens.
    func banner(proxy address: SocketAddress) -> String {
        let lifetime = Self.tokenLifetime
        let revokeEvery = Int(Self.revokeEvery.seconds)
        let story =
            switch self.backend {
            case .oauth2:
                """
                Demo: behind the proxy run a mock OAuth2 token server, whose tokens live \(lifetime)s, and a
                mock API that accepts only live tokens and revokes them all every \(revokeEvery)s.
                The proxy refreshes ahead of expiry, and on a 401 refreshes once and replays.
                """
            case .json:
                """
                Demo: behind the proxy run a mock app backend with JSON auth endpoints (POST /api/auth/login
                as user '\(Self.username)', POST /api/auth/refresh with a rotating refresh token, answers inside
                {"data": …}), whose tokens live \(lifetime)s, and a mock API that accepts only live tokens and
                revokes them all every \(revokeEvery)s. The proxy logs in once, refreshes ahead of expiry, and on
                a 401 refreshes once and replays; every other revocation the backend also forgets its refresh
                tokens, and the proxy logs in again (once, for every waiting request).
                """
            }
        return """

            \(story) Try:

              curl -i http://\(address)/whoami                      # which token generation reached the API
              while sleep 0.5; do curl -s http://\(address)/whoami; done   # refreshes, never a 401
              curl -i -x http://\(address) http://\(address)/items  # the same, as an HTTP proxy

            """
    }
}
