extension Configuration {
    /// The documentation table: every key of `keys`, once, under its topic, in the order the
    /// reference and proxy.conf.example read (`KeyDocumentation`).
    package static let keyGroups: [KeyGroup] = [
        .smallest, .clients, .gettingTokens, .signedCredentials, .dpop, .jsonBackends, .firstToken, .fleet,
        .access, .rules, .upstreamTLS, .interception, .running, .namedSessions,
    ]
}

extension KeyGroup {
    /// The two keys proxy.conf.example sets: a working proxy on their own.
    static let smallest = KeyGroup(
        title: "The smallest working configuration",
        introduction: "",
        keys: [
            KeyDocumentation(
                .upstream,
                "URL: http(s)://host[:port][/prefix]",
                default: "none (required for the default session, unless it is left out for [session NAME] sections)",
                example: "https://api.example.com/v2",
                """
                Where origin-form requests (`GET /v1/items`) go; the URL's path prefix is prepended to the \
                request's path, and `Host` is set to the upstream. Absolute-form requests to the upstream's host \
                (with no port or the upstream's port) go out with the upstream's scheme and port. Flag: \
                `--upstream`.
                """
            ),
            KeyDocumentation(
                .accessToken,
                "secret text (no spaces)",
                example: "${API_TOKEN}",
                """
                The token sent as `Authorization: Bearer <token>`. Alone (no `token_url` or `token_command`) it \
                is never refreshed: a 401 from the API goes to the client as it is, the log says so once for \
                that token, and `/status` reads `"state": "rejected"` until the API accepts it again. With a \
                token source it is generation 1, used until the first refresh. Keep it out of the file: \
                `${API_TOKEN}`.
                """
            ),
        ]
    )

    static let clients = KeyGroup(
        title: "Where clients connect, and who gets the token",
        introduction: "",
        keys: [
            KeyDocumentation(
                .listen,
                "HOST:PORT, [IPv6]:PORT or unix:/path; comma-separated",
                """
                The client-facing address or addresses. A unix socket is created mode 0600 (only you can \
                connect, no browser can reach it, and any Host is accepted); its file is removed at exit. In \
                a [session NAME] section: the session's own listener, whose requests all go to that session \
                (its base URL is `http://ADDR`). Port 0 picks a free port. Flag: `--listen`.
                """
            ),
            KeyDocumentation(
                .injectHosts,
                "host (any port), host:port, *.domain; comma-separated",
                default: "the upstream's host:port",
                example: "api.example.com, *.example.com",
                """
                The hosts that get the token: requests (and, with `tls_intercept`, CONNECTs) to them carry \
                `Authorization`, a client's own header replaced; a client's header to any other host is left \
                alone. `*.domain` covers every subdomain and `domain` itself. Each host belongs to one session: \
                the same host in two sessions' `inject_hosts` is an error.
                """
            ),
            KeyDocumentation(
                .otherHosts,
                "forward or deny",
                """
                What happens to absolute-form requests and CONNECTs to hosts that `inject_hosts` does not \
                match: forward them untouched (a CONNECT becomes a plain byte tunnel), or deny them with 403 \
                (405 for a CONNECT, with the reason).
                """
            ),
        ]
    )

    static let access = KeyGroup(
        title: "Who may use the proxy",
        introduction: """
            A local proxy holding a token is a confused deputy: any web page can make a browser send \
            requests to it, and DNS rebinding lets a page's own host name resolve to it. curl, scripts and \
            SDKs send neither a foreign Host nor fetch metadata, and are unaffected.
            """,
        keys: [
            KeyDocumentation(
                .acceptHosts,
                "host, host:port, *.domain; comma-separated",
                example: "myapp.test, *.dev.test",
                """
                Extra `Host` values accepted on origin-form requests. localhost, 127.0.0.1 and [::1] with the \
                listen port always are; any other Host is refused with a 403 naming this key (against DNS \
                rebinding). A unix socket accepts any Host.
                """
            ),
            KeyDocumentation(
                .acceptOrigins,
                "origins (scheme://host[:port]); comma-separated",
                example: "http://localhost:3000",
                """
                Browser origins allowed to use the proxy. A request whose `Origin` is not listed, or whose \
                `Sec-Fetch-Site` is cross-site or same-site, is refused with a 403 naming this key.
                """
            ),
        ]
    )

    static let upstreamTLS = KeyGroup(
        title: "Upstream TLS (https:// upstreams, token endpoints and session stores)",
        introduction: """
            TLS to an upstream is verified against the system trust store: the certificate chain, the host \
            name (SNI sent), TLS 1.2 at least, ALPN http/1.1 (and h2 as upstream_http2 says). Pooled connections are reused and new ones \
            resume the TLS session.
            """,
        keys: [
            KeyDocumentation(
                .caFile,
                "file path (PEM)",
                default: "the system store only",
                example: "/etc/ssl/private-ca.pem",
                """
                A PEM CA bundle trusted in addition to the system store, for a private CA: for upstreams, token, \
                revocation and login endpoints, and a `rediss://` session store.
                """
            ),
            KeyDocumentation(
                .tlsInsecureSkipVerify,
                "true or false",
                """
                Turns certificate and host name verification off, for upstreams and endpoints alike. \
                `--check` warns about it and start-up logs the same warning. Never in production.
                """
            ),
            KeyDocumentation(
                .http2,
                "on or off",
                """
                on: a client connection whose first bytes are the HTTP/2 connection preface is served as HTTP/2 \
                with prior knowledge (RFC 9113 §3.3), on every listener; each stream is routed, gets the token \
                and is replayed after a refresh as an HTTP/1.1 request is. off: HTTP/1.1 only; a preface gets a \
                400 and a log line naming this key.
                """
            ),
            KeyDocumentation(
                .maxConcurrentStreams,
                "a positive number",
                """
                The streams an HTTP/2 client may have open at once on one connection, advertised in the \
                proxy's SETTINGS; a stream beyond it is refused with RST_STREAM REFUSED_STREAM, which a client \
                retries.
                """
            ),
            KeyDocumentation(
                .upstreamHTTP2,
                "auto, on or off",
                """
                How this session's upstream is spoken to. auto: an `https://` upstream is offered ALPN `h2, \
                http/1.1` and spoken to in what it picks; an `http://` upstream in HTTP/1.1. on: also HTTP/2 with \
                prior knowledge to an `http://` upstream (what gRPC servers usually are). off: HTTP/1.1 only. \
                Over HTTP/2 the streams of every client share few upstream connections (within the server's \
                SETTINGS_MAX_CONCURRENT_STREAMS), the token goes out as an `authorization` field encoded \
                never-indexed, and a 401 on a stream is refreshed and replayed as over HTTP/1.1.
                """
            ),
        ]
    )

    static let interception = KeyGroup(
        title: "HTTPS clients: TLS interception for the inject hosts",
        introduction: """
            Clients must trust the local CA's ca.pem: `bearer-proxy ca` prints its path (`--bundle`: the \
            system's CAs plus ca.pem, in one file). See docs/https-interception.md.
            """,
        keys: [
            KeyDocumentation(
                .tlsIntercept,
                "on or off",
                """
                on: a CONNECT to an inject host (what a client given `https_proxy` sends for an `https://` URL) \
                is answered 200, its TLS is terminated with a certificate from a local CA made for the inject \
                hosts only, and the requests inside get the token like any other. CONNECTs to other hosts stay \
                plain byte tunnels (the client sees the real server's certificate). off: a CONNECT to an inject \
                host on port 443 gets a 405 naming this key; on another port the proxy reads the plain HTTP \
                inside itself.
                """
            ),
            KeyDocumentation(
                .caDir,
                "folder path",
                default: "$XDG_DATA_HOME/bearer-proxy/ca, else ~/.local/share/bearer-proxy/ca",
                example: "~/.local/share/bearer-proxy/ca",
                """
                Where the local CA lives (the folder mode 0700): ca.pem (the root clients trust), \
                intermediate.pem and intermediate-key.pem (mode 0600: it signs the leaves; the root's key is \
                destroyed once it has signed the intermediate), bundle.pem. Made on first need; replaced only \
                by `bearer-proxy ca --renew`. A CA permits only the inject hosts it was made for, so two configs \
                for different APIs need a folder each.
                """
            ),
        ]
    )

    static let running = KeyGroup(
        title: "Running",
        introduction: "",
        keys: [
            KeyDocumentation(
                .workers,
                "a number from 1 to 256",
                default: "the number of cores",
                example: "2",
                "The number of event-loop threads. Each connection lives on one loop."
            ),
            KeyDocumentation(
                .io,
                "io_uring or epoll",
                """
                How the event loops do their I/O. Where a kernel or container refuses io_uring, the proxy uses \
                epoll and says so at start.
                """
            ),
            KeyDocumentation(
                .maxHeaderBytes,
                "size (at least 1KiB)",
                """
                The largest request head accepted: a 431 as soon as more than that much of a head has arrived. \
                At most 256 header fields are accepted besides (431).
                """
            ),
            KeyDocumentation(
                .maxConnections,
                "a number",
                "Client connections held at once; the excess is answered 503 and closed, the others keep being served."
            ),
            KeyDocumentation(
                .upstreamConnectTimeout,
                "duration",
                """
                How long connecting to an upstream may take (then 504); also the session store's command \
                timeout.
                """
            ),
            KeyDocumentation(
                .upstreamTimeout,
                "duration",
                "How long the upstream may stay silent while a response is awaited or streaming (then 504)."
            ),
            KeyDocumentation(
                .clientHeaderTimeout,
                "duration",
                """
                From the first byte of a request head to its end (then 408); also the time an intercepted \
                tunnel's TLS handshake has.
                """
            ),
            KeyDocumentation(
                .clientIdleTimeout,
                "duration",
                """
                How long a keep-alive client connection may sit idle between requests before it is closed; a \
                request body that stops arriving for this long gets a 408. An HTTP/2 connection with no stream \
                open for this long ends with GOAWAY NO_ERROR, and a stream whose response the client takes \
                nothing of for this long (its window held at zero) is reset with CANCEL.
                """
            ),
            KeyDocumentation(
                .tunnelIdleTimeout,
                "duration",
                "A CONNECT tunnel or a WebSocket connection that carries no byte either way for this long is closed."
            ),
            KeyDocumentation(
                .logLevel,
                "error, warn, info or debug",
                "The log's level (stderr, one line per event). Flag: `--log-level`. SIGHUP applies a change."
            ),
            KeyDocumentation(
                .adminListen,
                "HOST:PORT, [IPv6]:PORT or unix:/path; comma-separated, or off",
                default: "off",
                example: "127.0.0.1:9901",
                """
                Where the admin endpoints are served: `GET /metrics` (Prometheus), `/healthz`, `/status` (JSON, \
                never a token), `POST /refresh` and `POST /logout` (`?session=NAME` for a named session; \
                `POST /refresh?park=1` makes requests wait for the new token, an expiry storm on demand for \
                `bearer-bench --config`), and a live page at `/` (fed by `/events`, one snapshot a second; docs/operations.md, \
                "The admin page"). The same Host and Origin rules apply, the page's own origin allowed. Flag: \
                `--admin-listen`.
                """
            ),
            KeyDocumentation(
                .accessLog,
                "off, stderr, or a file path",
                """
                One logfmt line per request (method, host, path, status, bytes, duration, whether it was \
                replayed), whatever `log_level` says; a file is appended to, mode 0600. It costs about 6% of \
                the throughput.
                """
            ),
            KeyDocumentation(
                .shutdownTimeout,
                "duration",
                """
                On SIGTERM or SIGINT: stop accepting, let in-flight requests finish for at most this long, exit \
                0.
                """
            ),
        ]
    )
}
