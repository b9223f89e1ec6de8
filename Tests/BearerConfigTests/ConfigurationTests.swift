import BearerCore
import BearerHTTP
import Foundation
import Testing

@testable import BearerConfig

@Suite struct ValueGrammarTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("1h", .seconds(3600)),
        ("1m30s", .seconds(90)), ("0s", .zero),
    ])
    func parsesDurations(text: String, expected: Duration) {
        #expect(ValueParsers.duration(text) == expected)
    }

    @Test(arguments: ["soon", "30", "s", "-5s", "5 s", "1.5s", "", "5d"])
    func rejectsBadDurations(text: String) {
        #expect(ValueParsers.duration(text) == nil)
    }

    @Test(arguments: [("64KiB", 65536), ("1MiB", 1 << 20), ("2GiB", 2 << 30), ("512B", 512), ("100", 100)])
    func parsesSizes(text: String, expected: Int) {
        #expect(ValueParsers.size(text) == expected)
    }

    @Test(arguments: ["64kb", "1.5MiB", "-1", "MiB", "lots"])
    func rejectsBadSizes(text: String) {
        #expect(ValueParsers.size(text) == nil)
    }

    @Test(arguments: [
        ("https://api.example.com/v2/", "https://api.example.com/v2", "api.example.com", 443),
        ("http://127.0.0.1:8081", "http://127.0.0.1:8081", "127.0.0.1:8081", 8081),
        ("HTTP://Api.Example.COM:80", "http://api.example.com", "api.example.com", 80),
        ("https://[::1]:8443/p", "https://[::1]:8443/p", "[::1]:8443", 8443),
    ])
    func parsesUpstreamURLs(text: String, description: String, authority: String, port: Int) throws {
        let url = try HTTPURL.parse(text).get()
        #expect(url.description == description)
        #expect(url.authority == authority)
        #expect(url.port == port)
    }

    @Test(arguments: [
        "ftp://h", "api.example.com", "http://", "http://u:p@h", "http://h:0", "http://h/x?y", "http://h h",
    ])
    func rejectsBadUpstreamURLs(text: String) {
        #expect(throws: URLParseError.self) { try HTTPURL.parse(text).get() }
    }

    @Test func matchesHostPatterns() {
        let exact = HostPattern.parse("api.example.com")!
        #expect(exact.matches(host: "api.example.com", port: 8443))
        #expect(!exact.matches(host: "evil.example.com", port: 443))
        let withPort = HostPattern.parse("API.example.com:443")!
        #expect(withPort.matches(host: "api.example.com", port: 443))
        #expect(!withPort.matches(host: "api.example.com", port: 80))
        let wildcard = HostPattern.parse("*.example.com")!
        #expect(wildcard.matches(host: "a.b.example.com", port: 1))
        #expect(!wildcard.matches(host: "example.com", port: 1))
        #expect(!wildcard.matches(host: "badexample.com", port: 1))
        #expect(HostPattern.parse("*.") == nil)
        #expect(HostPattern.parse("a b") == nil)
    }
}

@Suite struct ConfigFileTests {
    func load(
        _ text: String,
        environment: [String: String] = [:],
        overrides: [ConfigEntry] = []
    ) throws(ConfigurationError) -> Configuration {
        var entries = try ConfigFileParser.parse(text, fileName: "proxy.conf", environment: environment)
        entries += overrides
        return try Configuration.build(from: entries)
    }

    @Test func readsKeysCommentsQuotesAndEnvironment() throws {
        let config = try self.load(
            """
            # a comment
              # an indented comment
            upstream = https://api.example.com/v2
            access_token = ${API_TOKEN}
            listen = 127.0.0.1:9090, unix:/tmp/bp.sock
            inject_hosts = api.example.com, *.example.org, other:8080
            other_hosts = deny
            client_idle_timeout = "90s"

            max_header_bytes = 32KiB
            workers = 3
            """,
            environment: ["API_TOKEN": "tok#with-hash"]
        )
        #expect(config.upstream?.host == "api.example.com")
        #expect(config.accessToken?.reveal() == "tok#with-hash")
        #expect(config.listen.map(\.description) == ["127.0.0.1:9090", "unix:/tmp/bp.sock"])
        #expect(config.effectiveInjectHosts.map(\.description) == ["api.example.com", "*.example.org", "other:8080"])
        #expect(config.otherHosts == .deny)
        #expect(config.clientIdleTimeout == .seconds(90))
        #expect(config.maxHeaderBytes == 32 * 1024)
        #expect(config.workers == 3)
    }

    @Test func defaultsInjectHostsToTheUpstream() throws {
        let config = try self.load("upstream = https://api.example.com")
        #expect(config.effectiveInjectHosts == [.hostAndPort("api.example.com", 443)])
    }

    @Test func flagsOverrideTheFile() throws {
        let config = try self.load(
            "listen = 127.0.0.1:1111",
            overrides: [ConfigEntry(key: "listen", value: "127.0.0.1:2222", place: "command line (--listen)")]
        )
        #expect(config.listen.map(\.description) == ["127.0.0.1:2222"])
    }

    struct BadConfig: CustomTestStringConvertible, Sendable {
        let id: String
        let text: String
        let message: String
        var testDescription: String { self.id }
    }

    static let badConfigs: [BadConfig] = [
        BadConfig(
            id: "unknown key",
            text: "upstream = http://h\nlisten_port = 1",
            message: "proxy.conf:2: listen_port: unknown key"
        ),
        BadConfig(
            id: "typo",
            text: "upstrem = http://h",
            message: "proxy.conf:1: upstrem: unknown key (did you mean 'upstream'?)"
        ),
        BadConfig(
            id: "bad duration",
            text: "upstream_timeout = soon",
            message: "proxy.conf:1: upstream_timeout: invalid duration 'soon' (expected e.g. 500ms, 30s, 5m)"
        ),
        BadConfig(
            id: "unset variable",
            text: "access_token = ${NOPE_NOT_SET}",
            message: "proxy.conf:1: access_token: environment variable NOPE_NOT_SET is not set"
        ),
        BadConfig(
            id: "no equals",
            text: "upstream http://h",
            message: "proxy.conf:1: expected 'key = value' (the line is not shown: it may hold a secret)"
        ),
        BadConfig(
            id: "bad listen",
            text: "listen = 127.0.0.1",
            message: "proxy.conf:1: listen: '127.0.0.1' has no port (expected HOST:PORT, [IPv6]:PORT or unix:/path)"
        ),
        BadConfig(
            id: "bad size",
            text: "max_header_bytes = 10",
            message:
                "proxy.conf:1: max_header_bytes: invalid size '10' (expected e.g. 64KiB, 1MiB, at least 1024 bytes)"
        ),
        BadConfig(
            id: "key given twice",
            text: "upstream = http://a\nlisten = 127.0.0.1:1\nupstream = http://b",
            message: "proxy.conf:3: upstream: given twice, on proxy.conf:1 and proxy.conf:3 (keep one)"
        ),
        BadConfig(
            id: "comment after a value",
            text: "upstream = http://127.0.0.1:9000  # the staging API",
            message:
                "proxy.conf:1: upstream: '#' after the value: comments must be on their own line (quote the value if the '#' belongs to it)"
        ),
        BadConfig(
            id: "comment after a secret",
            text: "client_secret = ${SECRET}\t# from the vault",
            message:
                "proxy.conf:1: client_secret: '#' after the value: comments must be on their own line (quote the value if the '#' belongs to it)"
        ),
        BadConfig(
            id: "inject_hosts without a host",
            text: "upstream = http://a\ninject_hosts = ,",
            message:
                "proxy.conf:2: inject_hosts: no host in ',' (expected host, host:port or *.domain; leave the key out for the upstream's host)"
        ),
        BadConfig(
            id: "bad other_hosts",
            text: "other_hosts = maybe",
            message: "proxy.conf:1: other_hosts: expected forward or deny, got 'maybe'"
        ),
    ]

    @Test(arguments: badConfigs)
    func namesThePlaceTheKeyAndWhatIsExpected(_ bad: BadConfig) {
        #expect(throws: ConfigurationError.self) { try self.load(bad.text) }
        do {
            _ = try self.load(bad.text)
        } catch {
            #expect(error.description == bad.message)
        }
    }

    @Test func aQuotedValueMayHoldAHashAfterABlank() throws {
        let config = try self.load("upstream = http://h\npassword = \"pass #word\"\nscope = read#write")
        #expect(config.password?.reveal() == "pass #word")
        #expect(config.scope == "read#write")
    }

    @Test func flagsMayRepeatAKeyOfTheFile() throws {
        let entries = try ConfigFileParser.parse("listen = 127.0.0.1:1", fileName: "p.conf", environment: [:])
        let config = try Configuration.build(
            from: entries + [ConfigEntry(key: "listen", value: "127.0.0.1:2", place: "command line (--listen)")]
        )
        #expect(config.listen.map(\.description) == ["127.0.0.1:2"])
    }

    @Test func neverRepeatsASecretValueInAnError() {
        do {
            _ = try self.load("access_token = has space-secret-value")
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains("secret-value"))
        }
    }

    @Test func requiresAnUpstreamUnlessDemo() throws {
        #expect(throws: ConfigurationErrors.self) {
            try ConfigurationLoader.load(ConfigurationSource(), environment: [:])
        }
        let demo = ConfigurationSource(isDemo: true)
        _ = try ConfigurationLoader.load(demo, environment: [:])
    }

    @Test func reportMasksSecrets() throws {
        let config = try self.load("upstream = http://h:81\naccess_token = sekrit-token-value")
        let report = ConfigurationLoader.report(config)
        #expect(report.contains("access_token = <redacted>\n"))
        #expect(report.contains("upstream = http://h:81\n"))
        #expect(report.contains("client_header_timeout = 10s\n"))
        #expect(!report.contains("sekrit"))
    }
}

@Suite struct SessionConfigurationTests {
    @Test func readsEveryTokenSetting() throws {
        let text = """
            upstream = https://api.example.com
            token_url = https://auth.example.com/oauth/token
            grant_type = password
            client_id = cli
            client_secret = ${SECRET}
            scope = read write
            audience = https://api.example.com
            username = alice
            password = pw-secret
            client_auth = post
            refresh_on = 401, 403
            refresh_skew = 0s
            max_refreshes = 3
            refresh_window = 1m
            refresh_timeout = 10s
            replay_body_limit = 64KiB
            replay_memory_limit = 8MiB
            ca_file = /etc/ssl/private-ca.pem
            tls_insecure_skip_verify = false
            """
        let entries = try ConfigFileParser.parse(text, fileName: "p.conf", environment: ["SECRET": "s3cr3t"])
        let config = try Configuration.build(from: entries)
        try config.validateCombinations(place: "p.conf")
        #expect(config.tokenURL?.description == "https://auth.example.com/oauth/token")
        #expect(config.effectiveGrantType == .password)
        #expect(config.clientSecret?.reveal() == "s3cr3t")
        #expect(config.password?.reveal() == "pw-secret")
        #expect(config.clientAuthentication == .post)
        #expect(config.refreshOn == [401, 403])
        #expect(config.refreshSkew == .zero)
        #expect(config.maxRefreshes == 3)
        #expect(config.refreshWindow == .seconds(60))
        #expect(config.replayBodyLimit == 65536)
        #expect(config.replayMemoryLimit == 8 << 20)
        #expect(config.caFile == "/etc/ssl/private-ca.pem")
        let report = ConfigurationLoader.report(config)
        for secret in ["s3cr3t", "pw-secret"] { #expect(!report.contains(secret)) }
        #expect(report.contains("client_secret = <redacted>\n"))
        #expect(report.contains("password = <redacted>\n"))
    }

    @Test func readsTokenCommandWithQuotes() throws {
        let config = try Configuration.build(
            from: try ConfigFileParser.parse(
                #"token_command = sh -c 'vault read -field=token "secret/api key"'"#,
                fileName: "p",
                environment: [:]
            )
        )
        #expect(config.tokenCommand == ["sh", "-c", #"vault read -field=token "secret/api key""#])
        #expect(splitCommandLine("a 'b") == nil)
        #expect(splitCommandLine(" one  two\t\"three four\" ") == ["one", "two", "three four"])
    }

    @Test(arguments: [
        (
            "token_url = https://a/t\nclient_id = c\ntoken_command = x",
            "p.conf:3: token_command: set either token_url or token_command, not both"
        ),
        // With credential_store = file only: auto and secret-service keep it in the keyring (or auto in
        // the state folder's file when there is no keyring).
        (
            "token_url = https://a/t\ngrant_type = refresh_token\ncredential_store = file",
            "p.conf:2: grant_type: refresh_token needs refresh_token or refresh_token_file"
        ),
        // The grant is the default: the line that asks for a token endpoint is named.
        (
            "token_url = https://a/t",
            "p.conf:1: grant_type: client_credentials needs client_id (and usually client_secret)"
        ),
        (
            "token_url = https://a/t\ngrant_type = password\nusername = u",
            "p.conf:2: grant_type: password needs username and password"
        ),
    ])
    func rejectsIncompleteTokenSettings(text: String, message: String) throws {
        #expect(ConfigurationLoader.read(text, fileName: "p.conf").1.sortedErrors.map(\.description) == [message])
    }

    /// credential_store: its three values, `auto` by default; secret-service alone makes the grant
    /// refresh_token (the token is in the keyring, nothing in the file says so otherwise).
    @Test func credentialStoreIsReadAndSecretServiceImpliesTheRefreshTokenGrant() throws {
        let (configuration, diagnostics) = ConfigurationLoader.read(
            "token_url = https://a/t\nclient_id = c\ncredential_store = secret-service",
            fileName: "p.conf"
        )
        #expect(diagnostics.sortedErrors.isEmpty)
        #expect(configuration.defaultSession.credentialStore == .secretService)
        #expect(configuration.defaultSession.effectiveGrantType == .refreshToken)
        #expect(
            ConfigurationLoader.read("token_url = https://a/t\nclient_id = c", fileName: "p.conf").0.defaultSession
                .credentialStore == .auto
        )
        #expect(
            ConfigurationLoader.read("credential_store = keyring", fileName: "p.conf").1.sortedErrors.map(\.description)
                == ["p.conf:1: credential_store: expected auto, secret-service or file, got 'keyring'"]
        )
    }

    /// refresh_on: `401, grpc-unauthenticated` by default; a list without `grpc-unauthenticated`
    /// turns it off, one with only it keeps no status.
    @Test func refreshOnTakesGRPCUnauthenticated() throws {
        func read(_ line: String) -> SessionSettings {
            ConfigurationLoader.read("upstream = http://127.0.0.1:1\n" + line, fileName: "p.conf").0.defaultSession
        }
        let defaults = read("")
        #expect(defaults.refreshOn == [401] && defaults.refreshOnGRPCUnauthenticated)
        #expect(defaults.refreshOnDescription == "401,grpc-unauthenticated")
        let statuses = read("refresh_on = 401, 403")
        #expect(statuses.refreshOn == [401, 403] && !statuses.refreshOnGRPCUnauthenticated)
        let grpc = read("refresh_on = grpc-unauthenticated")
        #expect(grpc.refreshOn.isEmpty && grpc.refreshOnGRPCUnauthenticated)
        #expect(
            ConfigurationLoader.read("refresh_on = grpc", fileName: "p.conf").1.sortedErrors.map(\.description)
                == [
                    "p.conf:1: refresh_on: expected a comma list of 4xx/5xx statuses and grpc-unauthenticated, "
                        + "e.g. 401,403; got 'grpc'"
                ]
        )
    }

    /// upstream_http2: `auto` by default, a session key (each section has its own), three values.
    @Test func upstreamHTTP2IsASessionKeyWithThreeValues() throws {
        let (configuration, diagnostics) = ConfigurationLoader.read(
            """
            upstream = http://127.0.0.1:1
            [session grpc]
            upstream = http://127.0.0.1:2
            mount = /grpc
            upstream_http2 = on
            [session legacy]
            upstream = https://example.com
            mount = /legacy
            upstream_http2 = off
            """,
            fileName: "p.conf"
        )
        #expect(diagnostics.sortedErrors.isEmpty)
        #expect(configuration.defaultSession.upstreamHTTP2 == .auto)
        #expect(configuration.session(named: "grpc")?.upstreamHTTP2 == .on)
        #expect(configuration.session(named: "legacy")?.upstreamHTTP2 == .off)
        #expect(
            ConfigurationLoader.read("upstream_http2 = h2c", fileName: "p.conf").1.sortedErrors.map(\.description)
                == ["p.conf:1: upstream_http2: expected auto, on or off, got 'h2c'"]
        )
    }

    @Test(arguments: [
        (
            "refresh_on = 200",
            "refresh_on: expected a comma list of 4xx/5xx statuses and grpc-unauthenticated, e.g. 401,403; got '200'"
        ),
        (
            "grant_type = implicit",
            "grant_type: expected refresh_token, client_credentials, password or jwt_bearer, got 'implicit'"
        ),
        ("client_auth = jwt", "client_auth: expected basic, post, private_key_jwt or tls_client_auth, got 'jwt'"),
        ("tls_insecure_skip_verify = maybe", "tls_insecure_skip_verify: expected true or false, got 'maybe'"),
    ])
    func rejectsBadTokenValues(text: String, message: String) {
        do {
            _ = try Configuration.build(from: try ConfigFileParser.parse(text, fileName: "p.conf", environment: [:]))
            Issue.record("expected an error")
        } catch {
            #expect("\(error)" == "p.conf:1: \(message)")
        }
    }
}
