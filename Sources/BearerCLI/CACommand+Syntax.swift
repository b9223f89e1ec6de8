extension CACommand {
    struct Options: SubcommandOptions, Equatable {
        var configPath: String?
        /// Make a new root and intermediate first.
        var renewsCA = false
        /// Write bundle.pem and print its path.
        var writesBundle = false
    }

    static let configFlag = Flag.config("The proxy's config file: inject_hosts and ca_dir.")
    static let renewFlag = Flag(
        "--renew",
        help: """
            Make a new root and intermediate for the current inject_hosts first.
            Clients must then trust the new ca.pem; restart running proxies.
            """
    )
    static let bundleFlag = Flag(
        "--bundle",
        help: """
            Write bundle.pem (the system's CA certificates followed by ca.pem,
            for SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) and print its
            path instead.
            """
    )

    static let syntax = CommandSyntax(
        name: "ca",
        overview: """
            Print the absolute path of ca.pem, the local CA's root that HTTPS clients trust when
            tls_intercept is on. Makes the CA in ca_dir first when there is none (for the config's
            inject_hosts); an existing CA is never replaced except by --renew.
            """,
        usage: ["[--config <file>] [--renew] [--bundle]"],
        flags: [Self.configFlag, Self.renewFlag, Self.bundleFlag, .help],
        summary: """
            Print the path of the local CA's ca.pem (tls_intercept), making the CA
            first when there is none. See 'bearer-proxy ca --help'.
            """
    )

    static func options(_ arguments: ParsedArguments) -> Options {
        Options(
            configPath: arguments.value(of: Self.configFlag),
            renewsCA: arguments.contains(Self.renewFlag),
            writesBundle: arguments.contains(Self.bundleFlag)
        )
    }
}
