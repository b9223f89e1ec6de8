extension KeyGroup {
    static let jsonBackends = KeyGroup(
        title: "JSON app backends (token_format = json)",
        introduction: """
            For backends with their own JSON endpoints: `token_url` is the refresh endpoint, and the refresh \
            token comes from `refresh_token`, `refresh_token_file`, or a login. JSON requests carry \
            Content-Type: application/json.
            """,
        keys: [
            KeyDocumentation(
                .tokenBody,
                "a JSON template",
                default: #"{"refresh_token": "{{refresh_token}}"}"#,
                example: #"{"refreshToken": "{{refresh_token}}"}"#,
                """
                The refresh request's body. {{name}} is replaced by the JSON-escaped value of refresh_token, \
                username, password, client_id, client_secret or scope; put placeholders inside quotes. A \
                template that is not JSON, or names an unknown or unset value, stops the start. `--check` masks \
                its literal strings.
                """
            ),
            KeyDocumentation(
                .loginURL,
                "URL: http:// or https://",
                example: "https://api.example.com/api/auth/login",
                """
                The login endpoint, used with `username` and `password` when there is no refresh token or the \
                backend refused it (400, 401 or 403): one login for every waiting request, within the same \
                refresh.
                """
            ),
            KeyDocumentation(
                .loginBody,
                "a JSON template",
                default: #"{"username": "{{username}}", "password": "{{password}}"}"#,
                example: #"{"email": "{{username}}", "password": "{{password}}"}"#,
                "The login request's body, with the placeholders of `token_body`."
            ),
            KeyDocumentation(
                .logoutURL,
                "URL: http:// or https://",
                example: "https://api.example.com/api/auth/logout",
                "Called with token_body's shape on admin POST /logout and `bearer-proxy logout`."
            ),
            KeyDocumentation(
                .tokenField,
                "a dotted path (data.accessToken)",
                default: "searched at the top level, then under data: access_token, accessToken, token",
                example: "data.session.accessToken",
                "Where the backend's answer holds the access token."
            ),
            KeyDocumentation(
                .refreshTokenField,
                "a dotted path",
                default: "searched at the top level, then under data: refresh_token, refreshToken",
                example: "data.session.refreshToken",
                "Where the backend's answer holds the refresh token."
            ),
            KeyDocumentation(
                .expiresField,
                "a dotted path",
                default:
                    "expires_in, expiresIn (seconds) or expires_at, expiresAt (epoch seconds or milliseconds, or RFC 3339), searched like token_field; else the JWT's exp",
                example: "data.session.expiresAt",
                """
                Where the backend's answer holds the token's lifetime or expiry. A number from 1000000000 on is \
                an epoch time (from 10^12 on, in milliseconds), a smaller one seconds from now.
                """
            ),
        ]
    )

    static let firstToken = KeyGroup(
        title: "Getting the first refresh token: bearer-proxy login",
        introduction: """
            `bearer-proxy login --config proxy.conf` stores the refresh token in `refresh_token_file` (which \
            it needs); a running proxy picks it up within a second. See docs/token-sources.md.
            """,
        keys: [
            KeyDocumentation(
                .authorizationURL,
                "URL: http:// or https://",
                example: "https://auth.example.com/oauth/authorize",
                """
                The OAuth2 authorization endpoint: `bearer-proxy login` opens it in a browser (authorization \
                code with PKCE) and takes the answer on http://127.0.0.1:PORT/callback (register that redirect \
                URI).
                """
            ),
            KeyDocumentation(
                .deviceAuthorizationURL,
                "URL: http:// or https://",
                example: "https://auth.example.com/oauth/device/code",
                """
                The OAuth2 device authorization endpoint (RFC 8628), for `bearer-proxy login --device` on a \
                machine without a browser: it prints a code to enter on another device.
                """
            ),
            KeyDocumentation(
                .redirectPort,
                "a port from 0 to 65535",
                """
                The port of login's loopback redirect listener on 127.0.0.1; 0 picks a free one (set one when \
                the provider needs the exact redirect URI registered).
                """
            ),
            KeyDocumentation(
                .loginTimeout,
                "duration",
                "How long `bearer-proxy login` waits for the browser, the device approval or the password."
            ),
            KeyDocumentation(
                .revocationURL,
                "URL: http:// or https://",
                default: "none (logout is local)",
                example: "https://auth.example.com/oauth/revoke",
                """
                The RFC 7009 endpoint where admin POST /logout and `bearer-proxy logout` revoke the refresh \
                token.
                """
            ),
        ]
    )
}
