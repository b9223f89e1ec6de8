import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerCLI
@testable import BearerConfig
@testable import BearerProxy

/// `bearer-proxy env` and `run`: the variables, their quoting, the secrets kept out, the flags.
@Suite struct ClientEnvironmentTests {
    func names(_ environment: ClientEnvironment) -> [String] { environment.variables.map(\.name) }
    func value(_ name: String, in environment: ClientEnvironment) -> String? {
        environment.variables.first { $0.name == name }?.value
    }

    @Test func withoutInterceptionOnlyTheProxyAndItsBaseURL() {
        let environment = ClientEnvironment(
            proxyURL: "http://127.0.0.1:8080",
            injectHosts: [.hostAndPort("api.example.com", 443)],
            trust: nil
        )
        #expect(
            environment.exportScript == """
                export http_proxy='http://127.0.0.1:8080'
                export https_proxy='http://127.0.0.1:8080'
                export HTTP_PROXY='http://127.0.0.1:8080'
                export HTTPS_PROXY='http://127.0.0.1:8080'
                export NO_PROXY='localhost,127.0.0.1,::1'
                export no_proxy='localhost,127.0.0.1,::1'
                export BEARER_PROXY_URL='http://127.0.0.1:8080'

                """
        )
    }

    @Test func withInterceptionTheBundleAndTheRoot() {
        let environment = ClientEnvironment(
            proxyURL: "http://127.0.0.1:8080",
            injectHosts: [],
            trust: ClientTrustFiles(root: "/ca/ca.pem", bundle: "/ca/bundle.pem")
        )
        #expect(
            self.names(environment) == [
                "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "no_proxy", "SSL_CERT_FILE",
                "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS", "BEARER_PROXY_URL",
            ]
        )
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"] {
            #expect(self.value(name, in: environment) == "/ca/bundle.pem")
        }
        #expect(self.value("NODE_EXTRA_CA_CERTS", in: environment) == "/ca/ca.pem")
    }

    /// A local API on a loopback name must go through the proxy: that name leaves NO_PROXY, and so
    /// does a name that would send a host under it past the proxy.
    @Test(
        arguments: [
            ("127.0.0.1:3000", "localhost,::1"),
            ("localhost", "127.0.0.1,::1"),
            ("[::1]:8443", "localhost,127.0.0.1"),
            // Clients match a NO_PROXY entry against the name and every name under it.
            ("*.localhost", "127.0.0.1,::1"),
            ("app.localhost:3000", "127.0.0.1,::1"),
            ("*.example.com", "localhost,127.0.0.1,::1"),
            ("api.example.com, 127.0.0.1, localhost:1", "::1"),
            ("127.0.0.10", "localhost,127.0.0.1,::1"),
        ]
    )
    func noProxyLeavesOutTheLoopbackNamesAnInjectHostNames(injectHosts: String, noProxy: String) {
        let patterns = injectHosts.split(separator: ",").map { HostPattern.parse(String($0))! }
        let environment = ClientEnvironment(proxyURL: "http://127.0.0.1:1", injectHosts: patterns, trust: nil)
        #expect(self.value("NO_PROXY", in: environment) == noProxy)
        #expect(self.value("no_proxy", in: environment) == noProxy)
    }

    @Test(
        arguments: [
            ("127.0.0.1", 8080, "http://127.0.0.1:8080"),
            ("0.0.0.0", 81, "http://127.0.0.1:81"),
            ("::", 82, "http://[::1]:82"),
            ("::1", 83, "http://[::1]:83"),
            ("localhost", 84, "http://localhost:84"),
        ]
    )
    func theProxyURLIsAnAddressClientsCanReach(host: String, port: Int, url: String) {
        #expect(ClientEnvironment.proxyURL(host: host, port: port) == url)
    }

    @Test(
        arguments: [
            ("plain", "'plain'"),
            ("it's", #"'it'\''s'"#),
            ("a b", "'a b'"),
            ("$HOME `x` \"q\"", "'$HOME `x` \"q\"'"),
            ("", "''"),
        ]
    )
    func valuesAreSingleQuoted(value: String, quoted: String) {
        #expect(shellQuoted(value) == quoted)
    }

    /// The config path in the command a made CA's line gives: quoted only when a shell would not read
    /// it back as it is.
    @Test(
        arguments: [
            ("/etc/bearer-proxy/proxy.conf", "bearer-proxy ca --config /etc/bearer-proxy/proxy.conf --bundle"),
            ("my proxy.conf", "bearer-proxy ca --config 'my proxy.conf' --bundle"),
            ("$HOME/p.conf", "bearer-proxy ca --config '$HOME/p.conf' --bundle"),
        ]
    )
    func theBundleCommandQuotesTheConfigPathOnlyWhenItMust(path: String, command: String) {
        #expect(InterceptCertificates.bundleCommand(configFile: path) == command)
    }

    /// What a POSIX shell makes of the quoting: the value itself, whatever it holds.
    @Test func aShellReadsEveryQuotedValueBackUnchanged() throws {
        let values = ["it's a dir", "$(touch /nonexistent/x)", "back`tick`", "new\nline", "'", "\\"]
        let script = values.map { "printf '%s\\0' \(shellQuoted($0))" }.joined(separator: "\n")
        let outcome = try ExternalTools.run(["/bin/sh", "-c", script], timeout: .seconds(10))
        #expect(
            outcome.standardOutput.split(separator: "\0", omittingEmptySubsequences: false).dropLast()
                == values[...].map { Substring($0) }
        )
    }

    @Test func theChildGetsTheParentsVariablesLessTheSecretsWithOursOverTheirs() {
        let environment = ClientEnvironment(proxyURL: "http://127.0.0.1:9", injectHosts: [], trust: nil)
        let child = environment.applied(
            to: ["PATH": "/bin", "API_TOKEN": "t0k", "http_proxy": "http://corp:3128", "HOME": "/h"],
            removing: ["API_TOKEN", "NOT_SET"]
        )
        #expect(
            child == [
                "HOME=/h", "PATH=/bin", "http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
                "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1,::1",
                "no_proxy=localhost,127.0.0.1,::1", "BEARER_PROXY_URL=http://127.0.0.1:9",
            ]
        )
    }
}

/// The variables a config expands into secrets: what `run` keeps from its program.
@Suite struct SecretVariablesTests {
    func secretVariables(_ text: String, _ environment: [String: String]) -> Set<String> {
        let (config, diagnostics) = ConfigurationLoader.read(text, fileName: "p.conf", environment: environment)
        #expect(diagnostics.errors.isEmpty, "\(diagnostics.errors)")
        return config.provenance.secretVariables
    }

    @Test func everyKeyThatCheckMasksInWholeOrInPart() {
        let environment = [
            "UPSTREAM": "https://api.example.com", "A": "a", "R": "r", "S": "s", "P": "p", "USER": "alice",
            "ID": "cli", "REDIS_PW": "pw", "REDIS_HOST": "10.0.0.1", "BODY_SECRET": "b", "LOGIN_KEY": "k",
        ]
        let oauth = """
            upstream = ${UPSTREAM}
            access_token = ${A}
            refresh_token = x${R}y
            token_url = https://auth.example.com/token
            client_id = ${ID}
            client_secret = ${S}
            username = ${USER}
            password = ${P}
            session_store = redis://u:${REDIS_PW}@${REDIS_HOST}:6379/0
            """
        #expect(self.secretVariables(oauth, environment) == ["A", "R", "S", "P", "REDIS_PW", "REDIS_HOST"])
        let json = """
            upstream = https://api.example.com
            token_format = json
            token_url = https://api.example.com/refresh
            token_body = {"refreshToken": "{{refresh_token}}", "key": "${BODY_SECRET}"}
            login_url = https://api.example.com/login
            login_body = {"user": "{{username}}", "password": "{{password}}", "k": "${LOGIN_KEY}"}
            refresh_token_file = /tmp/rt
            """
        #expect(self.secretVariables(json, environment) == ["BODY_SECRET", "LOGIN_KEY"])
    }

    @Test func aConfigWithoutVariablesOrWithPlainOnesKeepsEveryVariable() {
        #expect(self.secretVariables("upstream = https://api.example.com\naccess_token = literal\n", [:]) == [])
        #expect(
            self.secretVariables("upstream = ${U}\nclient_id = ${ID}\n", ["U": "https://api.example.com", "ID": "c"])
                == []
        )
    }
}

@Suite struct WrapSubcommandTests {
    @Test func runTakesItsFlagsThenTheCommandAfterDashDash() throws {
        #expect(
            try RunCommand.parse([
                "--config", "p.conf", "--listen=127.0.0.1:0", "--no-intercept", "--log-level", "info",
                "--admin-listen", "127.0.0.1:9901", "--", "python3", "-u", "--config", "x.py",
            ])
                == RunCommand.Options(
                    configPath: "p.conf",
                    overrides: [
                        ConfigEntry(key: "listen", value: "127.0.0.1:0", place: "command line (--listen)"),
                        ConfigEntry(key: "tls_intercept", value: "off", place: "command line (--no-intercept)"),
                        ConfigEntry(key: "log_level", value: "info", place: "command line (--log-level)"),
                        ConfigEntry(
                            key: "admin_listen",
                            value: "127.0.0.1:9901",
                            place: "command line (--admin-listen)"
                        ),
                    ],
                    program: ["python3", "-u", "--config", "x.py"]
                )
        )
    }

    /// As with `env` and `sudo`: the first argument that is not a flag starts the command.
    @Test func theFirstArgumentThatIsNotAFlagStartsTheCommand() throws {
        #expect(
            try RunCommand.parse(["--config", "p.conf", "curl", "--help"])
                == RunCommand.Options(configPath: "p.conf", program: ["curl", "--help"])
        )
        #expect(try RunCommand.parse(["--", "--weird-name"]).program == ["--weird-name"])
    }

    @Test func runWithoutACommandOrWithAnUnknownFlagIsAnError() throws {
        #expect(throws: CommandLineError.missingCommand) { try RunCommand.parse(["--config", "p.conf"]) }
        #expect(throws: CommandLineError.missingCommand) { try RunCommand.parse(["--"]) }
        #expect(throws: CommandLineError.unknownOption("--lisen", meant: "--listen")) {
            try RunCommand.parse(["--lisen", "x", "--", "true"])
        }
        #expect(throws: CommandLineError.missingValue("--listen")) { try RunCommand.parse(["--listen"]) }
        #expect(throws: CommandLineError.unknownOption("--no-intercept=yes", meant: "--no-intercept")) {
            try RunCommand.parse(["--no-intercept=yes", "--", "true"])
        }
        #expect(try ParsedArguments(["--help"], for: RunCommand.syntax).isHelp)
        #expect(
            RunCommand.syntax.errorMessage(.missingCommand)
                == "Error: Missing the command to run, after '--'\nUsage: bearer-proxy run [--config <file>] [<options>] -- <command> [<argument> ...]\n  See 'bearer-proxy run --help' for more information.\n"
        )
    }

    @Test func envTakesConfigAndListenOnly() throws {
        #expect(
            try EnvCommand.parse(["--config", "p.conf", "--listen", "127.0.0.1:8081"])
                == EnvCommand.Options(
                    configPath: "p.conf",
                    overrides: [ConfigEntry(key: "listen", value: "127.0.0.1:8081", place: "command line (--listen)")]
                )
        )
        #expect(throws: CommandLineError.unknownOption("--no-intercept")) {
            try EnvCommand.parse(["--no-intercept"])
        }
        #expect(throws: CommandLineError.unexpectedArgument("true")) { try EnvCommand.parse(["true"]) }
    }

    /// run's own settings go over the file's, and the flags over run's.
    @Test func runsSettingsGoOverTheFilesAndItsFlagsOverThose() throws {
        let path = try ScratchSpace.newPath("run.conf")
        _ = FileManager.default.createFile(
            atPath: path,
            contents: Data(
                "upstream = http://127.0.0.1:9\nlisten = 127.0.0.1:8080\nadmin_listen = 127.0.0.1:9901\nlog_level = debug\nca_dir = /tmp/x\n"
                    .utf8
            )
        )
        defer { unlink(path) }
        let options = try RunCommand.parse(["--config", path, "--", "true"])
        let defaults = try ConfigurationLoader.load(
            options.configurationSource(overrides: RunCommand.overrides(options)),
            environment: [:]
        )
        #expect(defaults.listen == [.hostPort(host: "127.0.0.1", port: 0)])
        #expect(defaults.adminListen == nil)
        #expect(defaults.intercept.isEnabled)
        #expect(defaults.logLevel == .warn)
        let flags = try RunCommand.parse([
            "--config", path, "--listen", "[::1]:0", "--no-intercept", "--log-level", "error",
            "--admin-listen", "127.0.0.1:0", "true",
        ])
        let flagged = try ConfigurationLoader.load(
            flags.configurationSource(overrides: RunCommand.overrides(flags)),
            environment: [:]
        )
        #expect(flagged.listen == [.hostPort(host: "::1", port: 0)])
        #expect(flagged.adminListen == .hostPort(host: "127.0.0.1", port: 0))
        #expect(!flagged.intercept.isEnabled)
        #expect(flagged.logLevel == .error)
    }

    @Test func envHelpIsStable() {
        #expect(
            EnvCommand.syntax.helpText == """
                OVERVIEW: Print export lines that point HTTP clients at the configured proxy, for a proxy that
                runs as a service: eval "$(bearer-proxy env)". http_proxy, https_proxy, HTTP_PROXY and
                HTTPS_PROXY name the proxy; NO_PROXY and no_proxy list localhost, 127.0.0.1 and ::1, less any
                an inject host names; with tls_intercept on, SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE
                and GIT_SSL_CAINFO name bundle.pem (made when missing) and NODE_EXTRA_CA_CERTS ca.pem;
                BEARER_PROXY_URL is the proxy's base URL. Never a token.

                USAGE: bearer-proxy env [--config <file>] [--listen <addr>]

                OPTIONS:
                  --config <file>         The proxy's config file: listen, inject_hosts, tls_intercept, ca_dir.
                  --listen <addr>         The address the proxy was started with, when not the config's:
                                          HOST:PORT or [IPv6]:PORT (a unix socket cannot be an http_proxy).
                  -h, --help              Show help information.

                """
        )
    }

    @Test func runHelpIsStable() {
        #expect(
            RunCommand.syntax.helpText == """
                OVERVIEW: Run a program behind the proxy: start the config's proxy in this process, run the
                program with the environment of 'bearer-proxy env' for it, and stop the proxy when the program
                exits. The token stays in the proxy; the program gets only addresses and files to trust.

                USAGE: bearer-proxy run [--config <file>] [<options>] -- <command> [<argument> ...]

                OPTIONS:
                  --config <file>         The proxy's config file (the config's listen and admin_listen are
                                          not used: they belong to the proxy the file runs as a service).
                  --listen <addr>         Where the proxy listens: HOST:PORT or [IPv6]:PORT
                                          (default: a free port on 127.0.0.1)
                  --admin-listen <addr>   Serve the admin endpoints there (default: off)
                  --no-intercept          Leave tls_intercept off (default: on, so https:// requests to the
                                          inject hosts get the token; the program trusts the local CA).
                  --only-inject-hosts     Refuse requests and CONNECTs to every host that is
                                          not an inject host of a session (other_hosts = deny)
                  --log-level <level>     error, warn, info or debug (default: warn: the program's output is
                                          what you read).
                  -h, --help              Show help information.

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
    }
}
