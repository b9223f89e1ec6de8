extension ProxyCommand {
    static let configFlag = Flag.config(
        """
        Read settings from <file> (key = value lines; see proxy.conf.example);
        a pipe works too: --config <(pass show api/proxy.conf)
        """,
        default: Flag.Default(
            """
            $XDG_CONFIG_HOME/bearer-proxy/proxy.conf, else
            ~/.config/bearer-proxy/proxy.conf, when it exists
            """,
            startsLine: true
        )
    )
    static let listenFlag = Flag(
        "--listen",
        value: Flag.Value("addr", .address),
        help: "Client-facing address: HOST:PORT, [IPv6]:PORT or unix:/path",
        default: Flag.Default("127.0.0.1:8080", startsLine: true),
        sets: Flag.Setting(.listen)
    )
    static let upstreamFlag = Flag(
        "--upstream",
        value: Flag.Value("url", .url),
        help: "Target of origin-form requests: http(s)://host[:port][/prefix]",
        sets: Flag.Setting(.upstream)
    )
    static let adminListenFlag = Flag(
        "--admin-listen",
        value: Flag.Value("addr", .address),
        help: """
            Serve /metrics, /healthz, /status, POST /refresh, POST /logout
            and the live admin page at /
            there
            """,
        default: Flag.Default("off; with --demo: a free port on 127.0.0.1"),
        sets: Flag.Setting(.adminListen)
    )
    static let logLevelFlag = Flag(
        "--log-level",
        value: Flag.Value("level", .choice(["error", "warn", "info", "debug"])),
        help: "error, warn, info or debug",
        default: Flag.Default("info"),
        sets: Flag.Setting(.logLevel)
    )
    static let checkFlag = Flag(
        "--check",
        help: "Validate the configuration, print it with secrets masked, and exit."
    )
    static let demoFlag = Flag(
        "--demo",
        value: Flag.Value("json", .choice(["json", "oauth2"]), isOptional: true),
        help: """
            Run against built-in mock upstream and token servers; no config needed.
            json: a JSON login and refresh backend instead of OAuth2.
            """
    )
    static let versionFlag = Flag("--version", help: "Show the version.")

    static let syntax = CommandSyntax(
        overview: """
            A local authenticating HTTP proxy. It adds 'Authorization: Bearer <token>' to
            requests and forwards them upstream, refreshing the token when it expires.
            """,
        usage: ["[--config <file>] [<options>]", "--demo [json] [<options>]"],
        flags: [
            Self.configFlag, Self.listenFlag, Self.upstreamFlag, Self.adminListenFlag, Self.logLevelFlag,
            Self.checkFlag, Self.demoFlag, Self.versionFlag, .help,
        ],
        subcommands: subcommands.map { $0.syntax },
        discussion: "Flags override settings from the config file."
    )
}
