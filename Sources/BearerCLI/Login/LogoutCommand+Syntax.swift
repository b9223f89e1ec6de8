extension LogoutCommand {
    struct Options: SubcommandOptions, Equatable {
        var configPath: String?
        /// The `[session NAME]` whose refresh token it is (nil: the default session).
        var session: String?
    }

    static let configFlag = Flag.config("The proxy's config file.")
    static let sessionFlag = Flag.session("log out")

    static let syntax = CommandSyntax(
        name: "logout",
        overview: """
            Revoke the stored refresh token (at revocation_url, or at logout_url for
            token_format = json) and delete refresh_token_file (or the keyring item) and the client a login
            registered. They are deleted even when the server cannot be reached. Its lock file (<file>.lock) stays: removing a lock another process may hold
            would let two processes spend one refresh token.
            """,
        usage: ["[--config <file>] [--session <name>]"],
        flags: [Self.configFlag, Self.sessionFlag, .help],
        summary: """
            Revoke the stored refresh token and delete its file (--session <name>:
            that of a [session <name>]). See 'bearer-proxy logout --help'.
            """
    )

    static func options(_ arguments: ParsedArguments) -> Options {
        Options(configPath: arguments.value(of: Self.configFlag), session: arguments.value(of: Self.sessionFlag))
    }
}
