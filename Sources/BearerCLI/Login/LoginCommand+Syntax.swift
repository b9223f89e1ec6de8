extension LoginCommand {
    struct Options: SubcommandOptions, Equatable {
        var configPath: String?
        /// The `[session NAME]` whose refresh token it is (nil: the default session).
        var session: String?
        /// The device authorization grant.
        var usesDevice = false
        /// Print the authorization URL, do not open a browser.
        var opensBrowser = true
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

    static let syntax = CommandSyntax(
        name: "login",
        overview: """
            Log in once and store the refresh token in refresh_token_file, so the proxy can get
            tokens by itself. A running bearer-proxy picks the new file up within a second.
            """,
        usage: ["[--config <file>] [--session <name>] [--device] [--no-browser]"],
        flags: [Self.configFlag, Self.deviceFlag, Self.noBrowserFlag, Self.sessionFlag, .help],
        summary: """
            Log in once (browser, device code or password) and store the refresh
            token in refresh_token_file (--session <name>: that of a
            [session <name>]). See 'bearer-proxy login --help'.
            """,
        discussion: """
            How: token_format = json logs in at login_url (a username or password missing from the config
            is asked for on the terminal, the password without echo); authorization_url opens a browser
            (authorization code with PKCE; the answer comes back to http://127.0.0.1:<port>/callback);
            device_authorization_url prints a code to enter elsewhere. Gives up after login_timeout
            (default: 5m). Prints the token's expiry and scope, never a token.
            """
    )

    static func options(_ arguments: ParsedArguments) -> Options {
        Options(
            configPath: arguments.value(of: Self.configFlag),
            session: arguments.value(of: Self.sessionFlag),
            usesDevice: arguments.contains(Self.deviceFlag),
            opensBrowser: !arguments.contains(Self.noBrowserFlag)
        )
    }
}
