import BearerConfig

extension EnvCommand {
    struct Options: SubcommandOptions, Equatable {
        var configPath: String?
        /// `--listen`, a setting over the file's.
        var overrides: [ConfigEntry] = []
    }

    static let configFlag = Flag.config("The proxy's config file: listen, inject_hosts, tls_intercept, ca_dir.")
    static let listenFlag = Flag(
        "--listen",
        value: Flag.Value("addr", .address),
        help: """
            The address the proxy was started with, when not the config's:
            HOST:PORT or [IPv6]:PORT (a unix socket cannot be an http_proxy).
            """,
        sets: Flag.Setting(.listen)
    )

    static let syntax = CommandSyntax(
        name: "env",
        overview: """
            Print export lines that point HTTP clients at the configured proxy, for a proxy that
            runs as a service: eval "$(bearer-proxy env)". http_proxy, https_proxy, HTTP_PROXY and
            HTTPS_PROXY name the proxy; NO_PROXY and no_proxy list localhost, 127.0.0.1 and ::1, less any
            an inject host names; with tls_intercept on, SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE
            and GIT_SSL_CAINFO name bundle.pem (made when missing) and NODE_EXTRA_CA_CERTS ca.pem;
            BEARER_PROXY_URL is the proxy's base URL. Never a token.
            """,
        usage: ["[--config <file>] [--listen <addr>]"],
        flags: [Self.configFlag, Self.listenFlag, .help],
        summary: """
            Print export lines (http_proxy, https_proxy, NO_PROXY, the CA bundle)
            for clients of the proxy: eval "$(bearer-proxy env)".
            """
    )

    static func options(_ arguments: ParsedArguments) -> Options {
        Options(configPath: arguments.value(of: Self.configFlag), overrides: arguments.overrides)
    }
}
