extension KeyGroup {
    static let gettingTokens = KeyGroup(
        title: "Getting new tokens",
        introduction: """
            Without `token_url` or `token_command`, a 401 passes through to the client. With one, the proxy \
            fetches a token at start, refreshes it ahead of its expiry, and on a 401 (or a status in \
            `refresh_on`) runs exactly one refresh for every waiting request, then replays each once. See \
            docs/token-sources.md.
            """,
        keys: [
            KeyDocumentation(
                .issuer,
                "URL: https:// (http:// only on a loopback address)",
                example: "https://auth.example.com",
                """
                The authorization server. At start, at `--check` and on SIGHUP its metadata is read (RFC 8414 \
                `/.well-known/oauth-authorization-server`, then OpenID Connect \
                `/.well-known/openid-configuration`) and fills `token_url`, `authorization_url`, \
                `device_authorization_url` and `revocation_url` where the file leaves them unset; its `issuer` \
                must equal this value exactly. See docs/token-sources.md, "Discovery".
                """
            ),
            KeyDocumentation(
                .resourceURL,
                "URL: https:// (http:// only on a loopback address)",
                example: "https://api.example.com/v2",
                """
                The protected resource (the API). Its metadata (RFC 9728 \
                `/.well-known/oauth-protected-resource`, inserted before the URL's path) is read with the \
                issuer's: its `resource` must equal this value exactly, its first `authorization_servers` \
                entry is the `issuer` unless the file sets one, and the resource is sent as the RFC 8707 \
                `resource` parameter unless `resource` is set. See docs/token-sources.md, "Discovery".
                """
            ),
            KeyDocumentation(
                .tokenURL,
                "URL: http:// or https://",
                example: "https://auth.example.com/oauth/token",
                """
                The OAuth2 token endpoint (RFC 6749), or with `token_format = json` the backend's refresh \
                endpoint. Signed client assertions name it as their audience.
                """
            ),
            KeyDocumentation(
                .grantType,
                "refresh_token, client_credentials, password or jwt_bearer",
                default:
                    "refresh_token when a refresh token is set, jwt_bearer with service_account_file, else client_credentials",
                example: "client_credentials",
                """
                The grant posted to `token_url`. jwt_bearer: a JWT signed with `client_key_file` is the grant \
                itself (RFC 7523 §2.1).
                """
            ),
            KeyDocumentation(
                .clientID,
                "text",
                example: "my-client",
                "The OAuth2 client's id; client_credentials needs it, and signed assertions use it as iss and sub."
            ),
            KeyDocumentation(
                .clientSecret,
                "secret text",
                example: "${CLIENT_SECRET}",
                """
                The client's secret; keep it out of the file (`${CLIENT_SECRET}`). Without it the client is a \
                public one (it names itself with `client_id` in the form). Never sent with \
                `client_auth = private_key_jwt` or `tls_client_auth`.
                """
            ),
            KeyDocumentation(
                .clientAuth,
                "basic, post, private_key_jwt or tls_client_auth",
                """
                How the client authenticates at the token endpoint: basic (`client_secret` in HTTP Basic), post \
                (in form fields), private_key_jwt (a JWT signed with `client_key_file`, no secret) or \
                tls_client_auth (the TLS client certificate, `tls_client_cert`; only `client_id` is sent, RFC \
                8705 §2).
                """
            ),
            KeyDocumentation(
                .scope,
                "text (space-separated scopes)",
                example: "read write",
                "The OAuth2 scope, sent as a form field (and as a claim of a jwt_bearer assertion)."
            ),
            KeyDocumentation(
                .audience,
                "text",
                example: "https://api.example.com",
                "The audience (the API the token is for), sent as a form field."
            ),
            KeyDocumentation(
                .username,
                "text",
                example: "alice",
                """
                For grant_type password, and a JSON backend's login. `bearer-proxy login` asks for it when it is \
                not set.
                """
            ),
            KeyDocumentation(
                .password,
                "secret text",
                example: "${API_PASSWORD}",
                """
                For grant_type password, and a JSON backend's login; keep it out of the file \
                (`${API_PASSWORD}`). Without it the proxy only refreshes, and `bearer-proxy login` asks for the \
                password once, without echo.
                """
            ),
            KeyDocumentation(
                .refreshToken,
                "secret text",
                example: "${REFRESH_TOKEN}",
                "The refresh token (grant_type refresh_token), inline. Set either this or `refresh_token_file`."
            ),
            KeyDocumentation(
                .refreshTokenFile,
                "file path",
                example: "~/.config/my-api/refresh_token",
                """
                A file holding the bare refresh token: rewritten atomically (mode 0600) when the endpoint \
                rotates the token, and flock'ed (`<file>.lock`, an empty file that stays) across each refresh so \
                that processes sharing it never spend a token twice. `bearer-proxy login` stores the token it \
                gets here; a running proxy notices a new file within a second. SIGHUP reads it again.
                """
            ),
            KeyDocumentation(
                .credentialStore,
                "auto, secret-service or file",
                """
                Where the refresh token is kept. secret-service: the desktop's keyring (the freedesktop Secret \
                Service on the D-Bus session bus: gnome-keyring, KeePassXC), one item per session that \
                `secret-tool lookup application bearer-proxy session NAME kind refresh_token` finds; a locked \
                keyring is an error naming the fix, never a prompt waited for. file: `refresh_token_file`, as \
                above. auto: the keyring when `DBUS_SESSION_BUS_ADDRESS` is set and the service answers within \
                1s, else the file; a session that sets `refresh_token_file` or `refresh_token` keeps the file. \
                The start-up line and `--check` say which was chosen and why.
                """
            ),
            KeyDocumentation(
                .tokenFormat,
                "form or json",
                """
                How `token_url` is spoken to: form (OAuth2 form posts, RFC 6749) or json (an app backend's own \
                JSON endpoints; see the JSON app backends keys).
                """
            ),
            KeyDocumentation(
                .tokenCommand,
                "a command line",
                example: "vault read -field=token secret/api",
                """
                Instead of `token_url`: a command whose stdout is the access token, or an OAuth2 JSON token \
                response (then its `expires_in` is used). Split on blanks with '…' and "…" quoting, run without \
                a shell unless you write one (`sh -c '…'`), off the event loops, within `refresh_timeout` (then \
                killed with every process it started, and the waiting requests get 504). A non-zero exit \
                answers the waiting requests with a 502 naming its stderr.
                """
            ),
            KeyDocumentation(
                .refreshOn,
                "HTTP statuses and grpc-unauthenticated; comma-separated",
                example: "401, 403, grpc-unauthenticated",
                """
                The upstream statuses that mean "the token expired": refresh once, then replay the request. \
                `grpc-unauthenticated`: a gRPC call's Trailers-Only answer with `grpc-status: 16` means the \
                same (docs/grpc.md); a `refresh_on` without it passes UNAUTHENTICATED to the client.
                """
            ),
            KeyDocumentation(
                .refreshSkew,
                "duration (0 allowed)",
                """
                Refresh this long before a known expiry (`expires_in`, or a JWT's `exp`), at most half the \
                lifetime, in the background: requests keep flowing with the old token.
                """
            ),
            KeyDocumentation(
                .maxRefreshes,
                "a number",
                """
                The storm guard: at most this many refreshes per `refresh_window` for tokens rejected before \
                they ever worked (wrong scope, clock skew); past that, 401s go to the clients.
                """
            ),
            KeyDocumentation(
                .refreshWindow,
                "duration",
                """
                The storm guard's window (see `max_refreshes`); after a refused client_credentials, password or \
                command grant, also how long until the next call.
                """
            ),
            KeyDocumentation(
                .refreshTimeout,
                "duration",
                """
                How long requests wait for a refresh; transient failures are retried with backoff within it, \
                then 502 (no answer in time: 504). A `Retry-After` longer than this is a 503 with \
                `Retry-After`. Also the life of a fleet's refresh lock.
                """
            ),
            KeyDocumentation(
                .replayBodyLimit,
                "size",
                """
                Request bodies up to this size are kept until the response status is known, so that they can be \
                replayed after a refresh; a larger body streams through, and a 401 to it goes to the client.
                """
            ),
            KeyDocumentation(
                .replayMemoryLimit,
                "size",
                "The memory held for replays across all connections; past it, bodies stream unreplayable."
            ),
        ]
    )
}
