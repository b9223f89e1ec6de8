import Foundation
import Glibc

/// `bearer-proxy login`, `logout` and `ca`: their flags, their help, and the dispatch that main.swift
/// calls before it reads the proxy's own flags.
package enum Subcommand: String, CaseIterable, Sendable {
    case login
    case logout
    case ca

    /// What the subcommand's command line asked for.
    struct Options: Equatable, Sendable {
        var configPath: String?
        /// login: the device authorization grant.
        var usesDevice = false
        /// login: print the authorization URL, do not open a browser.
        var opensBrowser = true
        /// ca: make a new root and intermediate first.
        var renewsCA = false
        /// ca: write bundle.pem and print its path.
        var writesBundle = false
        var isHelp = false
    }

    /// Runs the subcommand the first argument names and returns its exit status; nil when the first
    /// argument is not a subcommand (the proxy itself runs).
    package static func runIfNamed(_ arguments: [String]) -> Int32? {
        guard let name = arguments.first, let subcommand = Subcommand(rawValue: name) else { return nil }
        // Ctrl-C and SIGTERM end a login at once, even when the parent started us with them blocked
        // (threads made later inherit this mask).
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
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
        }
    }

    func parse(_ arguments: [String]) throws(CommandLineError) -> Options {
        var options = Options()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch (self, argument) {
            case (_, "-h"), (_, "--help"): options.isHelp = true
            case (.login, "--device"): options.usesDevice = true
            case (.login, "--no-browser"): options.opensBrowser = false
            case (.ca, "--renew"): options.renewsCA = true
            case (.ca, "--bundle"): options.writesBundle = true
            case (_, "--config"):
                guard index < arguments.count else { throw .missingValue("--config") }
                options.configPath = arguments[index]
                index += 1
            case (_, _) where argument.hasPrefix("--config="):
                options.configPath = String(argument.dropFirst("--config=".count))
            case (_, _) where argument.hasPrefix("-"):
                throw .unknownOption(argument)
            default:
                throw .unexpectedArgument(argument)
            }
        }
        return options
    }

    var usageLine: String {
        switch self {
        case .login: "Usage: bearer-proxy login --config <file> [<options>]"
        case .logout: "Usage: bearer-proxy logout --config <file>"
        case .ca: "Usage: bearer-proxy ca [--config <file>] [--renew] [--bundle]"
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

        USAGE: bearer-proxy logout --config <file>

        OPTIONS:
          --config <file>         The proxy's config file.
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
