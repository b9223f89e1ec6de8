import BearerConfig
import BearerProxy

/// What the command line asked for. Flags that set config keys become entries that override the file.
package struct CommandLineOptions: Equatable, Sendable {
    package var configPath: String?
    package var overrides: [ConfigEntry] = []
    package var isCheck = false
    package var isDemo = false
    /// `--demo json`: the demo's token server is a JSON login/refresh backend instead of OAuth2.
    package var isJSONDemo = false
    package var isHelp = false
    package var isVersion = false
    /// False for the subcommands (`ca`, `env`, `run`, `login`, `logout`), whose command lines have no
    /// `--upstream` or `--demo`: the loader's hints then offer only what they take.
    package var takesProxyFlags = true

    /// What this command line asks of the configuration.
    package var configurationSource: ConfigurationSource {
        ConfigurationSource(
            configPath: self.configPath,
            overrides: self.overrides,
            isDemo: self.isDemo,
            takesProxyFlags: self.takesProxyFlags
        )
    }

    /// Flags that take a value, and the config key each one sets (nil: not a key).
    private static let valueFlags: [(flag: String, key: String?)] = [
        ("--config", nil),
        ("--listen", "listen"),
        ("--upstream", "upstream"),
        ("--admin-listen", "admin_listen"),
        ("--log-level", "log_level"),
    ]

    /// Every flag, for the `did you mean` of an unknown one.
    private static let flags = Self.valueFlags.map(\.flag) + ["--check", "--demo", "--version", "--help"]

    package static func parse(_ arguments: [String]) throws(CommandLineError) -> CommandLineOptions {
        var options = CommandLineOptions()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            switch name {
            case "--check": options.isCheck = true
            case "--demo":
                options.isDemo = true
                // An optional backend: `--demo json`, `--demo=json` (`oauth2`, the default, may be named).
                let next = index < arguments.count && !arguments[index].hasPrefix("-") ? arguments[index] : nil
                if let backend = inlineValue ?? next {
                    guard backend == "json" || backend == "oauth2" else { throw .unknownDemo(backend) }
                    options.isJSONDemo = backend == "json"
                    if inlineValue == nil { index += 1 }
                }
            case "-h", "--help": options.isHelp = true
            case "--version": options.isVersion = true
            default:
                guard let flag = Self.valueFlags.first(where: { $0.flag == name }) else {
                    if argument.hasPrefix("-") { throw .unknownOption(argument, among: Self.flags) }
                    throw .unexpectedArgument(argument)
                }
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw .missingValue(name) }
                    value = arguments[index]
                    index += 1
                }
                if let key = flag.key {
                    options.overrides.append(ConfigEntry(key: key, value: value, place: "command line (\(name))"))
                } else {
                    options.configPath = value
                }
            }
        }
        return options
    }

    package static let helpText = """
        OVERVIEW: A local authenticating HTTP proxy. It adds 'Authorization: Bearer <token>' to
        requests and forwards them upstream, refreshing the token when it expires.

        USAGE: bearer-proxy [--config <file>] [<options>]
               bearer-proxy --demo [json] [<options>]
               bearer-proxy login [--config <file>] [--session <name>] [--device] [--no-browser]
               bearer-proxy logout [--config <file>] [--session <name>]
               bearer-proxy ca [--config <file>] [--renew] [--bundle]
               bearer-proxy env [--config <file>] [--listen <addr>]
               bearer-proxy run [--config <file>] [<options>] -- <command> [<argument> ...]

        OPTIONS:
          --config <file>         Read settings from <file> (key = value lines; see proxy.conf.example);
                                  a pipe works too: --config <(pass show api/proxy.conf)
                                  (default: $XDG_CONFIG_HOME/bearer-proxy/proxy.conf, else
                                  ~/.config/bearer-proxy/proxy.conf, when it exists)
          --listen <addr>         Client-facing address: HOST:PORT, [IPv6]:PORT or unix:/path
                                  (default: 127.0.0.1:8080)
          --upstream <url>        Target of origin-form requests: http(s)://host[:port][/prefix]
          --admin-listen <addr>   Serve /metrics, /healthz, /status, POST /refresh, POST /logout
                                  there (default: off; with --demo: a free port on 127.0.0.1)
          --log-level <level>     error, warn, info or debug (default: info)
          --check                 Validate the configuration, print it with secrets masked, and exit.
          --demo [json]           Run against built-in mock upstream and token servers; no config needed.
                                  json: a JSON login and refresh backend instead of OAuth2.
          --version               Show the version.
          -h, --help              Show help information.

        SUBCOMMANDS:
          login                   Log in once (browser, device code or password) and store the refresh
                                  token in refresh_token_file (--session <name>: that of a
                                  [session <name>]). See 'bearer-proxy login --help'.
          logout                  Revoke the stored refresh token and delete its file (--session <name>:
                                  that of a [session <name>]). See 'bearer-proxy logout --help'.
          ca                      Print the path of the local CA's ca.pem (tls_intercept), making the CA
                                  first when there is none. See 'bearer-proxy ca --help'.
          env                     Print export lines (http_proxy, https_proxy, NO_PROXY, the CA bundle)
                                  for clients of the proxy: eval "$(bearer-proxy env)".
          run                     Run a program behind a proxy of its own, started for it on a free
                                  port and stopped when it exits. See 'bearer-proxy run --help'.

        Flags override settings from the config file.

        """

    package static let usageLine = "Usage: bearer-proxy [--config <file>] [<options>]"
}

/// A command-line mistake; printed as `Error: …`, the usage line, and a pointer to `--help`.
package enum CommandLineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A flag the command does not take, and the one it may have been meant to be.
    case unknownOption(String, meant: String? = nil)
    case unexpectedArgument(String)
    case missingValue(String)
    /// `--demo xml`: the argument after `--demo` names its variant.
    case unknownDemo(String)
    /// `bearer-proxy run` with nothing to run.
    case missingCommand

    package var description: String {
        switch self {
        case .unknownOption(let option, let meant):
            "Unknown option '\(option)'\(meant.map { " (did you mean '\($0)'?)" } ?? "")"
        case .unexpectedArgument(let argument): "Unexpected argument '\(argument)'"
        case .missingValue(let option): "Missing value for '\(option)'"
        case .unknownDemo(let name):
            "Unknown demo variant '\(name)': the only one is json (--demo json: a JSON login backend); plain --demo runs OAuth2"
        case .missingCommand: "Missing the command to run, after '--'"
        }
    }

    /// `argument`, which is none of `flags`, with the flag it was most likely meant to be: compared
    /// by name (`--lisen=x` as `--lisen`), without the dashes (`-check` is `--check`).
    static func unknownOption(_ argument: String, among flags: [String]) -> CommandLineError {
        let name = argument.prefix { $0 != "=" }.drop { $0 == "-" }
        let names = flags.map { String($0.drop { $0 == "-" }) }
        return .unknownOption(argument, meant: closestName(to: String(name), among: names).map { "--" + $0 })
    }

    package var fullMessage: String {
        "Error: \(self.description)\n\(CommandLineOptions.usageLine)\n  See 'bearer-proxy --help' for more information.\n"
    }
}
