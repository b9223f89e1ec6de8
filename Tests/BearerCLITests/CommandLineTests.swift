import BearerCore
import BearerHTTP
import Foundation
import Testing

@testable import BearerCLI

@Suite struct CommandLineTests {
    @Test func parsesFlagsInBothForms() throws {
        let options = try ProxyCommand.parse([
            "--config", "p.conf", "--listen=127.0.0.1:1", "--upstream", "http://h", "--check",
        ])
        #expect(options.configPath == "p.conf")
        #expect(options.isCheck)
        #expect(options.overrides.map(\.key) == ["listen", "upstream"])
        #expect(options.overrides[0].place == "command line (--listen)")
    }

    @Test func rejectsUnknownOptionsAndMissingValues() {
        #expect(throws: CommandLineError.unknownOption("--listn", meant: "--listen")) {
            try ProxyCommand.parse(["--listn", "x"])
        }
        #expect(throws: CommandLineError.missingValue("--upstream")) { try ProxyCommand.parse(["--upstream"]) }
        #expect(throws: CommandLineError.unexpectedArgument("stray")) { try ProxyCommand.parse(["stray"]) }
        #expect(
            ProxyCommand.syntax.errorMessage(.unknownOption("--listn", meant: "--listen"))
                == "Error: Unknown option '--listn' (did you mean '--listen'?)\nUsage: bearer-proxy [--config <file>] [<options>]\n  See 'bearer-proxy --help' for more information.\n"
        )
    }

    /// The help text is what a user reads first: any change to it shows up here, on purpose.
    @Test func helpTextIsStable() {
        #expect(
            ProxyCommand.syntax.helpText == """
                OVERVIEW: A local authenticating HTTP proxy. It adds 'Authorization: Bearer <token>' to
                requests and forwards them upstream, refreshing the token when it expires.

                USAGE: bearer-proxy [--config <file>] [<options>]
                       bearer-proxy --demo [json] [<options>]
                       bearer-proxy login [<url>] [--config <file>] [--session <name>] [--device] [--no-browser] [--scope <scope>] [--print]
                       bearer-proxy logout [--config <file>] [--session <name>]
                       bearer-proxy ca [--config <file>] [--renew] [--bundle]
                       bearer-proxy env [--config <file>] [--listen <addr>]
                       bearer-proxy run [--config <file>] [<options>] -- <command> [<argument> ...]
                       bearer-proxy audit <file>
                       bearer-proxy completions <shell>

                OPTIONS:
                  --config <file>         Read settings from <file> (key = value lines; see proxy.conf.example);
                                          a pipe works too: --config <(pass show api/proxy.conf)
                                          (default: $XDG_CONFIG_HOME/bearer-proxy/proxy.conf, else
                                          ~/.config/bearer-proxy/proxy.conf, when it exists)
                  --listen <addr>         Client-facing address: HOST:PORT, [IPv6]:PORT or unix:/path
                                          (default: 127.0.0.1:8080)
                  --upstream <url>        Target of origin-form requests: http(s)://host[:port][/prefix]
                  --admin-listen <addr>   Serve /metrics, /healthz, /status, POST /refresh, POST /logout
                                          and the live admin page at /
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
                                          [session <name>]); <url>: an API's address, whose session it adds
                                          to the config. See 'bearer-proxy login --help'.
                  logout                  Revoke the stored refresh token and delete its file (--session <name>:
                                          that of a [session <name>]). See 'bearer-proxy logout --help'.
                  ca                      Print the path of the local CA's ca.pem (tls_intercept), making the CA
                                          first when there is none. See 'bearer-proxy ca --help'.
                  env                     Print export lines (http_proxy, https_proxy, NO_PROXY, the CA bundle)
                                          for clients of the proxy: eval "$(bearer-proxy env)".
                  run                     Run a program behind a proxy of its own, started for it on a free
                                          port and stopped when it exits. See 'bearer-proxy run --help'.
                  audit                   Sum up an audit log (audit_log = FILE) on one screen.
                  completions             Print a completion script for bash, zsh or fish, e.g.
                                          source <(bearer-proxy completions bash).

                Flags override settings from the config file.

                """
        )
    }
}
