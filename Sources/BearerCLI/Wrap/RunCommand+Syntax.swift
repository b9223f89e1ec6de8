import BearerConfig

extension RunCommand {
    struct Options: SubcommandOptions, Equatable {
        var configPath: String?
        /// `--listen`, `--admin-listen`, `--no-intercept`, `--only-inject-hosts`, `--log-level`: settings over run's own and
        /// the file's (`RunCommand.overrides`).
        var overrides: [ConfigEntry] = []
        /// The program and its arguments.
        var program: [String] = []
    }

    static let configFlag = Flag.config(
        """
        The proxy's config file (the config's listen and admin_listen are
        not used: they belong to the proxy the file runs as a service).
        """
    )
    static let listenFlag = Flag(
        "--listen",
        value: Flag.Value("addr", .address),
        help: "Where the proxy listens: HOST:PORT or [IPv6]:PORT",
        default: Flag.Default("a free port on 127.0.0.1", startsLine: true),
        sets: Flag.Setting(.listen)
    )
    static let adminListenFlag = Flag(
        "--admin-listen",
        value: Flag.Value("addr", .address),
        help: "Serve the admin endpoints there",
        default: Flag.Default("off"),
        sets: Flag.Setting(.adminListen)
    )
    static let noInterceptFlag = Flag(
        "--no-intercept",
        help: "Leave tls_intercept off",
        default: Flag.Default(
            "on, so https:// requests to the\ninject hosts get the token; the program trusts the local CA",
            endsSentence: true
        ),
        sets: Flag.Setting(.tlsIntercept, to: "off")
    )
    static let onlyInjectHostsFlag = Flag(
        "--only-inject-hosts",
        help:
            "Refuse requests and CONNECTs to every host that is\nnot an inject host of a session (other_hosts = deny)",
        sets: Flag.Setting(.otherHosts, to: "deny")
    )
    static let logLevelFlag = Flag(
        "--log-level",
        value: Flag.Value("level", .choice(["error", "warn", "info", "debug"])),
        help: "error, warn, info or debug",
        default: Flag.Default("warn: the program's output is\nwhat you read", endsSentence: true),
        sets: Flag.Setting(.logLevel)
    )

    static let syntax = CommandSyntax(
        name: "run",
        overview: """
            Run a program behind the proxy: start the config's proxy in this process, run the
            program with the environment of 'bearer-proxy env' for it, and stop the proxy when the program
            exits. The token stays in the proxy; the program gets only addresses and files to trust.
            """,
        usage: ["[--config <file>] [<options>] -- <command> [<argument> ...]"],
        flags: [
            Self.configFlag, Self.listenFlag, Self.adminListenFlag, Self.noInterceptFlag, Self.onlyInjectHostsFlag,
            Self.logLevelFlag, .help,
        ],
        takesProgram: true,
        summary: """
            Run a program behind a proxy of its own, started for it on a free
            port and stopped when it exits. See 'bearer-proxy run --help'.
            """,
        discussion: """
            The program runs without a shell (found on PATH) on this terminal, standard input, output and
            error, with BEARER_PROXY_URL (http://127.0.0.1:<port>, the API's base URL through the proxy)
            added. The exit status is the program's, or 128 + N when signal N ended it; 127 when it is not
            found. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to run are passed on to it;
            a Ctrl-C at the terminal reaches it once. A bad config or a taken port: exit 1, the program is
            not started. Environment variables that the config expands (${VAR}) into a secret
            (access_token, refresh_token, client_secret, password, session_store, token_body, login_body)
            are removed from the program's environment: it has no use for them, and there they would
            leak into crash dumps and 'ps e'.
            """
    )

    static func options(_ arguments: ParsedArguments) -> Options {
        Options(
            configPath: arguments.value(of: Self.configFlag),
            overrides: arguments.overrides,
            program: arguments.program
        )
    }
}
