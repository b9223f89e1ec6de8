import Testing

@testable import BearerConfig

/// What `--check` finds in a file: every error at once, in file order, none that only follows from
/// another; and warnings for settings that work but surely not as meant.
@Suite struct ConfigurationDiagnosticsTests {
    func findings(_ text: String) -> (errors: [String], warnings: [String]) {
        let (_, found) = ConfigurationLoader.read(text, fileName: "p.conf", environment: ["SECRET": "s3cr3t"])
        return (found.sortedErrors.map(\.description), found.sortedWarnings.map(\.description))
    }

    @Test func everyLineErrorIsReportedInFileOrder() {
        let found = self.findings("workers = 0\nupstream = ftp://h\n\nrefresh_on = 200\nworkers = 1\nnot a line")
        #expect(
            found.errors == [
                "p.conf:1: workers: expected a number from 1 to 256, got '0'",
                "p.conf:2: upstream: 'ftp://h' must start with http:// or https:// (expected e.g. https://api.example.com/v2)",
                "p.conf:4: refresh_on: expected a comma list of 4xx/5xx statuses and grpc-unauthenticated, e.g. 401,403; got '200'",
                "p.conf:5: workers: given twice, on p.conf:1 and p.conf:5 (keep one)",
                "p.conf:6: expected 'key = value' (the line is not shown: it may hold a secret)",
            ]
        )
    }

    /// A URL the config refuses for its user info or query is quoted without them: they are where
    /// people put passwords and API keys, and the error reaches the terminal and the journal.
    @Test func aRefusedURLIsQuotedWithoutItsUserInfoOrQuery() {
        let found = self.findings(
            """
            upstream = http://bob:UPWSECRET@127.0.0.1:9555
            token_url = https://u:TU/SE?CRET@auth.internal/t
            revocation_url = https://auth.internal/revoke?key=QSECRET
            login_url = https://api.internal/login#FRAGSECRET
            logout_url = https://api.internal/out?login=me@example.com&key=ATSECRET
            """
        )
        #expect(
            found.errors == [
                "p.conf:1: upstream: 'http://…@127.0.0.1:9555' must not contain user info (put credentials in the token settings) (expected e.g. https://api.example.com/v2)",
                // The password's `?` starts a query for the parser, and the quote cannot tell: only the scheme.
                "p.conf:2: token_url: 'https://…' must not have a query or fragment (expected e.g. https://auth.example.com/oauth/token)",
                "p.conf:3: revocation_url: 'https://auth.internal/revoke?…' must not have a query or fragment (expected e.g. https://auth.example.com/oauth/revoke)",
                "p.conf:4: login_url: 'https://api.internal/login#…' must not have a query or fragment (expected e.g. https://api.example.com/api/auth/login)",
                // An `@` after the `?`: a query with an address in it, or a password with a `?`; only the scheme is shown.
                "p.conf:5: logout_url: 'https://…' must not have a query or fragment (expected e.g. https://api.example.com/api/auth/logout)",
            ]
        )
        for secret in ["UPWSECRET", "TU/SE", "CRET", "QSECRET", "FRAGSECRET", "ATSECRET", "example.com&"] {
            #expect(!found.errors.joined().contains(secret), "\(secret) shown in an error")
        }
    }

    /// An upstream that is the proxy's own listener would send every request round until its head
    /// overflows, with the token on each hop: refused where the mistake is.
    @Test(arguments: [
        ("upstream = http://127.0.0.1:8080", "http://127.0.0.1:8080", "listen = 127.0.0.1:8080"),
        ("upstream = http://localhost:8080", "http://localhost:8080", "listen = 127.0.0.1:8080"),
        ("listen = 0.0.0.0:9000\nupstream = http://127.0.0.2:9000", "http://127.0.0.2:9000", "listen = 0.0.0.0:9000"),
        (
            "listen = [::]:9000\nupstream = http://[0:0:0:0:0:0:0:1]:9000",
            "http://[0:0:0:0:0:0:0:1]:9000", "listen = [::]:9000"
        ),
        (
            "upstream = https://api.internal\n[session b]\nupstream = http://127.0.0.1:8080/b/v1\nmount = /b",
            "http://127.0.0.1:8080/b/v1", "listen = 127.0.0.1:8080, mount = /b"
        ),
        (
            // The longest mount takes the path, as the router picks it: c, whose upstream comes back to c.
            "upstream = https://api.internal\n[session b]\nupstream = https://b.internal\nmount = /b\n"
                + "[session c]\nupstream = http://127.0.0.1:8080/b/v2/x\nmount = /b/v2",
            "http://127.0.0.1:8080/b/v2/x", "listen = 127.0.0.1:8080, mount = /b/v2"
        ),
    ])
    func anUpstreamThatIsTheProxysOwnListenerIsRefused(text: String, upstream: String, through: String) {
        let errors = self.findings(text).errors
        let expected =
            "upstream: \(upstream) is this proxy's own listener (\(through)): every request would come back to it"
        #expect(errors.count == 1)
        #expect(errors.first?.contains(expected) == true, "\(errors)")
    }

    @Test func twoSessionsSendingToEachOtherAreBothRefused() {
        let errors = self.findings(
            "upstream = http://127.0.0.1:8081\n[session b]\nlisten = 127.0.0.1:8081\nupstream = http://127.0.0.1:8080"
        ).errors
        #expect(
            errors == [
                "p.conf:1: upstream: http://127.0.0.1:8081 is this proxy's own listener (listen = 127.0.0.1:8081 of [session b], whose upstream leads back here): every request would come back to it (point upstream at the API)",
                "p.conf:4: upstream: http://127.0.0.1:8080 is this proxy's own listener (listen = 127.0.0.1:8080, whose upstream leads back here): every request would come back to it (point upstream at the API)",
            ]
        )
    }

    /// Another port, host or address family is another socket (IPv6 listeners take no IPv4); a chain
    /// through another session that ends at the API ends; an https upstream fails its handshake.
    @Test(arguments: [
        "upstream = http://127.0.0.1:8081",
        "listen = 127.0.0.1:9000\nupstream = http://127.0.0.1:8080",
        "listen = 127.0.0.1:0\nupstream = http://127.0.0.1:8080",
        "listen = unix:/tmp/p.sock\nupstream = http://127.0.0.1:8080",
        "upstream = http://10.1.2.3:8080",
        "upstream = http://[::1]:8080",
        "upstream = http://127.0.0.2:8080",
        "listen = [::]:8080\nupstream = http://127.0.0.1:8080",
        "listen = 0.0.0.0:8080\nupstream = http://[::1]:8080",
        "upstream = https://127.0.0.1:8080",
        "upstream = https://api.internal\n[session b]\nupstream = http://127.0.0.1:8080\nmount = /b",
    ])
    func anUpstreamOnAnotherSocketOrAChainThatEndsIsNotALoop(text: String) {
        #expect(self.findings(text).errors == [])
    }

    @Test func aMistypedListenLineIsNotMeasuredAgainstTheDefault() {
        let errors = self.findings("listen = 127.0.0.1:80800\nupstream = http://127.0.0.1:8080").errors
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("p.conf:1: listen: ") == true, "\(errors)")
    }

    @Test func aRuleAboutABrokenLinesKeyIsDropped() {
        // token_url's value is wrong: "login needs token_url" would blame the user twice for one typo.
        let found = self.findings(
            "upstream = https://api.internal\ntoken_url = auth.internal/t\nauthorization_url = https://a.internal/a"
        )
        #expect(found.errors.count == 1)
        #expect(found.errors.first?.hasPrefix("p.conf:2: token_url: ") == true)
        // A key given twice keeps its first line; the rules still see it.
        let twice = self.findings("upstream = https://api.internal\ntoken_url = https://a.internal/t\ntoken_url = x")
        #expect(
            twice.errors == [
                "p.conf:2: grant_type: client_credentials needs client_id (and usually client_secret)",
                "p.conf:3: token_url: given twice, on p.conf:2 and p.conf:3 (keep one)",
            ]
        )
    }

    struct WarningCase: CustomTestStringConvertible, Sendable {
        let id: String
        let text: String
        let warnings: [String]
        var testDescription: String { self.id }
    }

    static let base = "upstream = https://api.internal\naccess_token = t\n"

    static let warningCases: [WarningCase] = [
        WarningCase(
            id: "a clean file",
            text: base + "listen = 127.0.0.1:8080, [::1]:8080, unix:/tmp/p.sock",
            warnings: []
        ),
        WarningCase(
            id: "a complete token endpoint",
            text:
                "upstream = https://api.internal\ntoken_url = https://auth.internal/t\nclient_id = c\nclient_secret = ${SECRET}",
            warnings: []
        ),
        WarningCase(
            id: "loopback over http",
            text:
                "upstream = http://localhost:9000\naccess_token = t\ntoken_url = http://127.0.0.2:9001/t\nclient_id = c",
            warnings: []
        ),
        WarningCase(
            id: "placeholders",
            text:
                "upstream = https://api.example.org\naccess_token = t\nrevocation_url = https://auth.test.invalid/r",
            warnings: [
                "p.conf:1: upstream: api.example.org is a placeholder (example.org is reserved for documentation): put the real host here",
                "p.conf:3: revocation_url: auth.test.invalid is a placeholder (.invalid is reserved for documentation): put the real host here",
            ]
        ),
        WarningCase(
            id: "a token endpoint in clear text",
            text: "upstream = https://api.internal\ntoken_url = http://auth.internal/t\nclient_id = c",
            warnings: [
                "p.conf:2: token_url: http:// to auth.internal, which is not this machine: tokens cross the network unencrypted (use https://)"
            ]
        ),
        WarningCase(
            id: "an http upstream that gets no token",
            text: "upstream = http://api.internal\naccess_token = t\ninject_hosts = other.internal",
            warnings: [
                "p.conf:3: inject_hosts: does not match the upstream api.internal: origin-form requests go upstream without the token (add api.internal)"
            ]
        ),
        WarningCase(
            id: "a store in clear text",
            text: base + "session_store = redis://redis.internal:6379",
            warnings: [
                "p.conf:3: session_store: redis:// to redis.internal, which is not this machine: the session's tokens cross the network unencrypted (use rediss://)"
            ]
        ),
        WarningCase(
            id: "listening for other machines",
            text: base + "listen = 0.0.0.0:8080, 127.0.0.1:8081",
            warnings: [
                "p.conf:3: listen: 0.0.0.0:8080 accepts connections from other machines: whoever reaches it spends your token (bind 127.0.0.1, or a unix: socket)"
            ]
        ),
        WarningCase(
            id: "token_command with form keys",
            text: "upstream = https://api.internal\ntoken_command = vault read x\nscope = read",
            warnings: ["p.conf:3: scope: is not used: token_command gives the tokens"]
        ),
        WarningCase(
            id: "a secret without its client",
            text:
                "upstream = https://api.internal\ntoken_url = https://a.internal/t\ngrant_type = refresh_token\nrefresh_token = r\nclient_secret = ${SECRET}",
            warnings: ["p.conf:5: client_secret: is never sent without client_id (set the client it belongs to)"]
        ),
        WarningCase(
            id: "a refresh token the grant never sends",
            text:
                "upstream = https://api.internal\ntoken_url = https://a.internal/t\ngrant_type = client_credentials\nclient_id = c\nrefresh_token_file = /tmp/rt",
            warnings: ["p.conf:5: refresh_token_file: is not used by grant_type = client_credentials"]
        ),
        WarningCase(
            id: "a login with nowhere to store its token",
            text:
                "upstream = https://api.internal\ntoken_url = https://a.internal/t\nclient_id = c\ndevice_authorization_url = https://a.internal/d",
            warnings: [
                "p.conf:4: device_authorization_url: 'bearer-proxy login' stores the refresh token in refresh_token_file: set it"
            ]
        ),
        WarningCase(
            id: "no token source",
            text: "upstream = https://api.internal",
            warnings: [
                "p.conf:1: no token source: requests are forwarded without an Authorization header (set access_token, token_url or token_command)"
            ]
        ),
        WarningCase(
            id: "verification off",
            text: base + "tls_insecure_skip_verify = true",
            warnings: [
                "p.conf:3: tls_insecure_skip_verify: certificates and host names of upstreams, token endpoints and the session store are NOT verified: anyone on the network path can read the token (never in production)"
            ]
        ),
    ]

    @Test(arguments: warningCases)
    func warnsAboutSettingsThatWorkButNotAsMeant(_ warningCase: WarningCase) {
        let found = self.findings(warningCase.text)
        #expect(found.errors.isEmpty)
        #expect(found.warnings == warningCase.warnings)
    }

    /// Start-up sees the same warnings as `--check`, placed at the same lines.
    @Test func theConfigurationCarriesItsWarnings() {
        let (config, found) = ConfigurationLoader.read(Self.base + "session_name = x", fileName: "p.conf")
        #expect(config.warnings == found.sortedWarnings)
        #expect(config.warnings.map(\.description) == ["p.conf:3: session_name: is not used without session_store"])
    }

    @Test func warningsNeverRepeatASecret() {
        let found = self.findings(
            "upstream = http://api.internal\naccess_token = tok-secret-1\nclient_secret = ${SECRET}\nsession_store = redis://:pw-secret-2@r.internal:6379"
        )
        #expect(found.warnings.count >= 3)
        for secret in ["tok-secret-1", "s3cr3t", "pw-secret-2"] {
            #expect(!found.warnings.joined().contains(secret))
        }
    }
}
