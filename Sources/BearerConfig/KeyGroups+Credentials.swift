extension KeyGroup {
    static let signedCredentials = KeyGroup(
        title: "Service accounts and locked-down APIs: keys instead of secrets",
        introduction: """
            Key files are read once at start (and by `--check`, `login` and `logout`; SIGHUP reads them \
            again), in PKCS#8 or the traditional RSA/EC PEM, unencrypted; keep them mode 0600 (`--check` \
            warns otherwise, and shows a key's kind, never a byte of it). Every signed JWT is fresh: a new \
            jti, exp 60 seconds after iat, aud the token endpoint. See docs/token-sources.md.
            """,
        keys: [
            KeyDocumentation(
                .clientKeyFile,
                "file path (PEM private key)",
                example: "~/.config/bearer-proxy/client-key.pem",
                """
                The private key that signs private_key_jwt client assertions and jwt_bearer grants: RSA (2048 \
                bits or more) signs RS256, EC P-256 signs ES256.
                """
            ),
            KeyDocumentation(
                .clientKeyID,
                "text",
                example: "2024-key-1",
                "The `kid` of the signed JWTs' header: the key's id at the authorization server."
            ),
            KeyDocumentation(
                .assertionIssuer,
                "text",
                default: "client_id",
                example: "my-client",
                "For grant_type jwt_bearer: the assertion's iss."
            ),
            KeyDocumentation(
                .assertionSubject,
                "text",
                example: "alice@example.com",
                """
                For grant_type jwt_bearer: the assertion's sub, the user the token is for (with a Google \
                service account: domain-wide delegation).
                """
            ),
            KeyDocumentation(
                .serviceAccountFile,
                "file path (a Google service-account key, JSON)",
                example: "~/.config/gcloud/my-service-account.json",
                """
                A Google service-account key file ("type": "service_account"): with `scope`, all a Google API \
                needs. Implies grant_type jwt_bearer: iss its client_email, kid its private_key_id, signed with \
                its private_key, sent to its token_uri (unless `token_url` is set), the scope as a claim.
                """
            ),
            KeyDocumentation(
                .tlsClientCert,
                "file path (PEM certificate, then its chain)",
                example: "~/.config/bearer-proxy/client.pem",
                """
                A client certificate presented, when the server asks for one, on TLS connections to the \
                upstream, the inject hosts, and the token, revocation and login endpoints (mutual TLS, RFC \
                8705); never to another host a client names through the proxy.
                """
            ),
            KeyDocumentation(
                .tlsClientKey,
                "file path (PEM private key)",
                example: "~/.config/bearer-proxy/client-key.pem",
                "The client certificate's private key, unencrypted; it must match the certificate."
            ),
            KeyDocumentation(
                .resource,
                "absolute URIs without a fragment; comma-separated",
                example: "https://api.example.com/",
                """
                Resource indicators (RFC 8707): each is a `resource` parameter of every token request, in \
                order, and `bearer-proxy login` names them on the authorization URL, the device request, the \
                code exchange and each device poll.
                """
            ),
        ]
    )

    static let dpop = KeyGroup(
        title: "Sender-constrained tokens: DPoP (RFC 9449)",
        introduction: "",
        keys: [
            KeyDocumentation(
                .dpop,
                "on or off",
                """
                on: token requests carry a DPoP proof signed with `dpop_key_file`, and a token answered with \
                token_type DPoP is sent as `Authorization: DPoP <token>` with a fresh proof on every request \
                (token_type Bearer stays plain bearer). off: a DPoP-bound token is refused with a 502 saying \
                to set this key. Cannot be combined with `session_store`.
                """
            ),
            KeyDocumentation(
                .dpopKeyFile,
                "file path",
                default:
                    "$XDG_DATA_HOME/bearer-proxy/dpop-key.pem, else ~/.local/share/bearer-proxy/dpop-key.pem (a named session's: dpop-key-NAME.pem)",
                example: "~/.local/share/bearer-proxy/dpop-key.pem",
                """
                The proof key: EC P-256, PEM, mode 0600, made on first need (by the proxy's start or \
                `bearer-proxy login`) and never replaced, since tokens are bound to it. Each session has its \
                own.
                """
            ),
        ]
    )

    static let fleet = KeyGroup(
        title: "A fleet of proxies sharing one session (Redis)",
        introduction: "See docs/fleet.md.",
        keys: [
            KeyDocumentation(
                .sessionStore,
                "redis://[user:password@]host:port[/db], or rediss:// for TLS",
                example: "rediss://bearer-proxy:${REDIS_PASSWORD}@redis.internal:6380/0",
                """
                One session for several proxies (on several machines) acting for one account: one refresh for \
                the whole fleet, under a lock, and new tokens published to the others. rediss:// is verified \
                like upstreams. The store holds the tokens: protect it (its password is shown as <redacted> \
                everywhere).
                """
            ),
            KeyDocumentation(
                .sessionName,
                "1 to 64 letters, digits, '.', '_' or '-'",
                default: "default (in a [session NAME] section: NAME)",
                """
                The shared session's name in the store: its keys are bearer-proxy:{session_name}:…, so one \
                Redis can hold several fleets.
                """
            ),
            KeyDocumentation(
                .sessionStoreFallback,
                "local or fail",
                """
                What a refresh does while the store cannot be reached: local (refresh in this process, with one \
                warning per outage) or fail (502 naming the store, never a refresh outside the fleet's lock).
                """
            ),
        ]
    )

    static let namedSessions = KeyGroup(
        title: "Several APIs in one proxy: [session NAME]",
        introduction: """
            The keys that describe an API and its tokens (upstream, inject_hosts, every token key, \
            refresh_on, refresh_skew, replay_body_limit, max_refreshes, refresh_window, session_name, and \
            listen) are the default session's outside any section. A line `[session NAME]` (letters, digits, \
            - and _) starts another session, with its own API, tokens and refresh: its keys run to the next \
            [session …] line. Every other key is process-wide and stays above the first section. A named \
            session takes the requests on its own listener (listen), the paths under its mount on the main \
            listener, and absolute-form requests and CONNECTs to its inject_hosts. Paths no mount matches go \
            to the default session. See docs/sessions.md. For example, an OAuth2 API and an app backend \
            with a JSON login, beside the default session:
            """,
        sample: """
            [session billing]
            mount = /billing
            upstream = https://billing.example.com/v1
            token_url = https://auth.example.com/oauth/token
            client_id = my-client
            client_secret = ${BILLING_CLIENT_SECRET}

            [session shop]
            listen = 127.0.0.1:8081
            upstream = https://shop.example.com/api
            token_format = json
            token_url = https://shop.example.com/api/auth/refresh
            login_url = https://shop.example.com/api/auth/login
            username = alice
            password = ${SHOP_PASSWORD}
            """,
        sampleOutcome: """
            Then curl http://127.0.0.1:8080/billing/invoices carries the billing token, and \
            curl http://127.0.0.1:8081/orders the shop's. POST /refresh?session=billing and \
            `bearer-proxy login --session shop` name a session; `bearer-proxy env` exports \
            BEARER_PROXY_URL_BILLING and BEARER_PROXY_URL_SHOP.
            """,
        keys: [
            KeyDocumentation(
                .mount,
                "a path prefix (/billing)",
                example: "/billing",
                """
                A named session's path prefix on the main listener: `GET /billing/invoices` goes to the \
                session's upstream as `GET /invoices` (the prefix removed, the upstream's path prefix \
                prepended). Mounts match whole segments, and the longest wins.
                """
            )
        ]
    )
}
