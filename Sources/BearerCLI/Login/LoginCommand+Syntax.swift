extension LoginCommand {
    struct Options: SubcommandOptions, Equatable {
        var configPath: String?
        /// The `[session NAME]` whose refresh token it is (nil: the default session).
        var session: String?
        /// The device authorization grant.
        var usesDevice = false
        /// Print the authorization URL, do not open a browser.
        var opensBrowser = true
        /// `login URL`: the API to log in to, from its own 401 (nil: the session the config has).
        var url: String?
        /// `login URL --scope`: the scope the new session asks for.
        var scope: String?
        /// `login URL --print`: print the new session's section instead of adding it to the config.
        var printsSection = false
    }

    static let configFlag = Flag.config("The proxy's config file: how to log in, where the token goes.")
    static let deviceFlag = Flag(
        "--device",
        help: """
            Log in on another device with a code (OAuth2 device authorization,
            RFC 8628). The default when only device_authorization_url is set.
            """
    )
    static let noBrowserFlag = Flag("--no-browser", help: "Print the authorization URL without opening a browser.")
    static let sessionFlag = Flag.session("log in")
    static let scopeFlag = Flag(
        "--scope",
        value: Flag.Value("scope", .text),
        help: "With <url>: the scope the new session asks for (its scope key)."
    )
    static let printFlag = Flag(
        "--print",
        help: """
            With <url>: print the new [session <name>] instead of adding it to
            the config file.
            """
    )

    static let syntax = CommandSyntax(
        name: "login",
        overview: """
            Log in once and store the refresh token in refresh_token_file, so the proxy can get
            tokens by itself. A running bearer-proxy picks the new file up within a second.
            """,
        usage: ["[<url>] [--config <file>] [--session <name>] [--device] [--no-browser] [--scope <scope>] [--print]"],
        flags: [
            Self.configFlag, Self.deviceFlag, Self.noBrowserFlag, Self.printFlag, Self.scopeFlag, Self.sessionFlag,
            .help,
        ],
        operand: Flag.Value("url", .url, isOptional: true),
        summary: """
            Log in once (browser, device code or password) and store the refresh
            token in refresh_token_file (--session <name>: that of a
            [session <name>]); <url>: an API's address, whose session it adds
            to the config. See 'bearer-proxy login --help'.
            """,
        discussion: """
            How: token_format = json logs in at login_url (a username or password missing from the config
            is asked for on the terminal, the password without echo); authorization_url opens a browser
            (authorization code with PKCE; the answer comes back to http://127.0.0.1:<port>/callback);
            device_authorization_url prints a code to enter elsewhere. Gives up after login_timeout
            (default: 5m). Prints the token's expiry and scope, never a token.

            With <url> (the API's address) it needs no config: it asks the API without a token, reads
            the protected resource metadata its 401 names (RFC 9728) and its authorization server's
            (RFC 8414), registers bearer-proxy as a client when there is no client_id (RFC 7591), logs
            in (the browser; the device code with --device or when no browser can be opened), stores
            the refresh token, and adds a [session <name>] for the API to the config file (created
            when missing; an existing one is only appended to). Then 'bearer-proxy --config <file>'
            serves the API with the token.
            """
    )

    static func options(_ arguments: ParsedArguments) -> Options {
        Options(
            configPath: arguments.value(of: Self.configFlag),
            session: arguments.value(of: Self.sessionFlag),
            usesDevice: arguments.contains(Self.deviceFlag),
            opensBrowser: !arguments.contains(Self.noBrowserFlag),
            url: arguments.operand,
            scope: arguments.value(of: Self.scopeFlag),
            printsSection: arguments.contains(Self.printFlag)
        )
    }
}
