import BearerProxy
import Foundation
import Glibc

/// `bearer-proxy login`, `logout`, `ca`, `env` and `run`: their flags, their help, and the dispatch
/// that main.swift calls before it reads the proxy's own flags.
package enum Subcommand: String, CaseIterable, Sendable {
    case login
    case logout
    case ca
    case env
    case run

    /// What the subcommand's command line asked for.
    struct Options: Equatable, Sendable {
        var configPath: String?
        /// login, logout: the `[session NAME]` whose refresh token it is (nil: the default session).
        var session: String?
        /// login: the device authorization grant.
        var usesDevice = false
        /// login: print the authorization URL, do not open a browser.
        var opensBrowser = true
        /// ca: make a new root and intermediate first.
        var renewsCA = false
        /// ca: write bundle.pem and print its path.
        var writesBundle = false
        /// env, run: `--listen`; run: `--admin-listen`, `--log-level` (config keys, set over the file's).
        var listen: String?
        var adminListen: String?
        var logLevel: String?
        /// run: tls_intercept on (`--no-intercept`: off).
        var intercepts = true
        /// run: the program and its arguments.
        var command: [String] = []
        var isHelp = false
    }

    /// Runs the subcommand the first argument names and returns its exit status; nil when the first
    /// argument is not a subcommand (the proxy itself runs).
    package static func runIfNamed(_ arguments: [String]) -> Int32? {
        guard let name = arguments.first, let subcommand = Subcommand(rawValue: name) else { return nil }
        // `run` takes its signals itself, on a thread of its own: they are blocked before anything
        // makes a thread (the parse below makes none).
        let wrapped = subcommand == .run ? WrappedCommand.start(socketFiles: UnixSocketFiles()) : nil
        // Ctrl-C and SIGTERM end a login at once, even when the parent started us with them blocked
        // (threads made later inherit this mask).
        if wrapped == nil {
            var stopSignals = sigset_t()
            sigemptyset(&stopSignals)
            sigaddset(&stopSignals, SIGINT)
            sigaddset(&stopSignals, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        }
        let options: Options
        do throws(CommandLineError) {
            options = try subcommand.parse(Array(arguments.dropFirst()))
        } catch {
            Console.write(subcommand.fullMessage(error), to: STDERR_FILENO)
            return 1
        }
        if options.isHelp {
            Console.write(subcommand.helpText, to: STDOUT_FILENO)
            return 0
        }
        switch subcommand {
        case .login: return LoginCommand.run(options, console: .standard)
        case .logout: return LogoutCommand.run(options, console: .standard)
        case .ca: return CACommand.run(options, console: .standard)
        case .env: return EnvCommand.run(options, console: .standard)
        case .run: return RunCommand.run(options, command: wrapped!)
        }
    }

    func parse(_ arguments: [String]) throws(CommandLineError) -> Options {
        var options = Options()
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
            /// The flag's value: after `=`, or the next argument.
            func value() throws(CommandLineError) -> String {
                if let inlineValue { return inlineValue }
                guard index < arguments.count else { throw .missingValue(name) }
                index += 1
                return arguments[index - 1]
            }
            // Flags without a value are matched whole (`--device=x` is unknown), the others by name.
            switch (self, argument) {
            case (_, "-h"), (_, "--help"): options.isHelp = true
            case (.login, "--device"): options.usesDevice = true
            case (.login, "--no-browser"): options.opensBrowser = false
            case (.ca, "--renew"): options.renewsCA = true
            case (.ca, "--bundle"): options.writesBundle = true
            case (.run, "--no-intercept"): options.intercepts = false
            case (_, _) where name == "--config": options.configPath = try value()
            case (.login, _) where name == "--session", (.logout, _) where name == "--session":
                options.session = try value()
            case (.env, _) where name == "--listen", (.run, _) where name == "--listen": options.listen = try value()
            case (.run, _) where name == "--admin-listen": options.adminListen = try value()
            case (.run, _) where name == "--log-level": options.logLevel = try value()
            case (.run, "--"):
                options.command = Array(arguments[index...])
                index = arguments.count
            case (.run, _) where !argument.hasPrefix("-"):
                // The program, as with `env` and `sudo`: what follows is its own.
                options.command = Array(arguments[(index - 1)...])
                index = arguments.count
            case (_, _) where argument.hasPrefix("-"):
                throw .unknownOption(argument, among: self.flags)
            default:
                throw .unexpectedArgument(argument)
            }
        }
        if self == .run && options.command.isEmpty && !options.isHelp { throw .missingCommand }
        return options
    }

    /// The flags `parse` takes (`--help` too), for the `did you mean` of an unknown one.
    var flags: [String] {
        switch self {
        case .login: ["--config", "--session", "--device", "--no-browser", "--help"]
        case .logout: ["--config", "--session", "--help"]
        case .ca: ["--config", "--renew", "--bundle", "--help"]
        case .env: ["--config", "--listen", "--help"]
        case .run: ["--config", "--listen", "--admin-listen", "--no-intercept", "--log-level", "--help"]
        }
    }

    var usageLine: String {
        switch self {
        case .login: "Usage: bearer-proxy login --config <file> [<options>]"
        case .logout: "Usage: bearer-proxy logout --config <file> [--session <name>]"
        case .ca: "Usage: bearer-proxy ca [--config <file>] [--renew] [--bundle]"
        case .env: "Usage: bearer-proxy env [--config <file>] [--listen <addr>]"
        case .run: "Usage: bearer-proxy run [--config <file>] [<options>] -- <command> [<argument> ...]"
        }
    }

    /// `Error: …`, the usage line, and where help is, as for the proxy's own flags.
    func fullMessage(_ error: CommandLineError) -> String {
        "Error: \(error.description)\n\(self.usageLine)\n  See 'bearer-proxy \(self.rawValue) --help' for more information.\n"
    }

    var helpText: String {
        switch self {
        case .login: Self.loginHelp
        case .logout: Self.logoutHelp
        case .ca: Self.caHelp
        case .env: Self.envHelp
        case .run: Self.runHelp
        }
    }

    static let loginHelp = """
        OVERVIEW: Log in once and store the refresh token in refresh_token_file, so the proxy can get
        tokens by itself. A running bearer-proxy picks the new file up within a second.

        USAGE: bearer-proxy login --config <file> [<options>]

        OPTIONS:
          --config <file>         The proxy's config file: how to log in, where the token goes.
          --device                Log in on another device with a code (OAuth2 device authorization,
                                  RFC 8628). The default when only device_authorization_url is set.
          --no-browser            Print the authorization URL without opening a browser.
          --session <name>        The [session <name>] of the config file to log in (default: the
                                  keys outside any section).
          -h, --help              Show help information.

        How: token_format = json logs in at login_url (a username or password missing from the config
        is asked for on the terminal, the password without echo); authorization_url opens a browser
        (authorization code with PKCE; the answer comes back to http://127.0.0.1:<port>/callback);
        device_authorization_url prints a code to enter elsewhere. Gives up after login_timeout
        (default: 5m). Prints the token's expiry and scope, never a token.

        """

    static let logoutHelp = """
        OVERVIEW: Revoke the stored refresh token (at revocation_url, or at logout_url for
        token_format = json) and delete refresh_token_file. The file is deleted even when the server
        cannot be reached. Its lock file (<file>.lock) stays: removing a lock another process may hold
        would let two processes spend one refresh token.

        USAGE: bearer-proxy logout --config <file> [--session <name>]

        OPTIONS:
          --config <file>         The proxy's config file.
          --session <name>        The [session <name>] of the config file to log out (default: the
                                  keys outside any section).
          -h, --help              Show help information.

        """

    static let caHelp = """
        OVERVIEW: Print the absolute path of ca.pem, the local CA's root that HTTPS clients trust when
        tls_intercept is on. Makes the CA in ca_dir first when there is none (for the config's
        inject_hosts); an existing CA is never replaced except by --renew.

        USAGE: bearer-proxy ca [--config <file>] [--renew] [--bundle]

        OPTIONS:
          --config <file>         The proxy's config file: inject_hosts and ca_dir.
          --renew                 Make a new root and intermediate for the current inject_hosts first.
                                  Clients must then trust the new ca.pem; restart running proxies.
          --bundle                Write bundle.pem (the system's CA certificates followed by ca.pem,
                                  for SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) and print its
                                  path instead.
          -h, --help              Show help information.

        """
}
