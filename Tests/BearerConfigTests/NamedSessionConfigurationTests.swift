import BearerHTTP
import BearerIO
import Testing

@testable import BearerConfig

/// The config file's `[session NAME]` sections (docs/sessions.md, "Several APIs in one proxy"): what each
/// session holds, where a key may be, and every overlap a start-up error naming both lines.
@Suite struct NamedSessionConfigurationTests {
    static let environment = ["SECRET": "s3cr3t", "OTHER": "0th3r"]

    func read(_ text: String) -> (Configuration, errors: [String], warnings: [String]) {
        let (config, found) = ConfigurationLoader.read(text, fileName: "p.conf", environment: Self.environment)
        return (config, found.sortedErrors.map(\.description), found.sortedWarnings.map(\.description))
    }

    static let twoAPIs = """
        upstream = https://api.internal/v2
        access_token = ${SECRET}
        workers = 3
        refresh_skew = 10s

        [session github]
        mount = /github
        upstream = https://api.github.com
        token_url = https://github.com/login/oauth/access_token
        client_id = gh-client
        client_secret = ${OTHER}

        [session shop]
        listen = 127.0.0.1:8181
        upstream = http://127.0.0.1:3000/api
        token_format = json
        login_url = http://127.0.0.1:3000/api/login
        username = alice
        password = pw
        refresh_on = 401,403
        """

    @Test func eachSectionIsASessionWithItsOwnKeysAndTheFilesProcessWideOnes() throws {
        let (config, errors, warnings) = self.read(Self.twoAPIs)
        #expect(errors.isEmpty && warnings.isEmpty, "\(errors) \(warnings)")
        // The keys outside any section are the default session, as in a file without sections.
        #expect(config.upstream?.description == "https://api.internal/v2")
        #expect(config.accessToken?.reveal() == "s3cr3t")
        #expect(config.listen == [.hostPort(host: "127.0.0.1", port: 8080)])
        #expect(config.sessionName == "default")
        #expect(config.namedSessions.map(\.name) == ["github", "shop"])
        #expect(config.namedSessions.map { config.places(of: $0.name).whole } == ["p.conf:6", "p.conf:13"])

        let github = try #require(config.session(named: "github"))
        #expect(github.upstream?.description == "https://api.github.com")
        #expect(github.mount == "/github")
        #expect(github.tokenURL?.host == "github.com" && github.clientSecret?.reveal() == "0th3r")
        #expect(github.accessToken == nil, "a session key of the default session is not a named session's")
        #expect(github.refreshSkew == .seconds(30), "refresh_skew is a session key: the default's is not github's")
        #expect(config.process.workers == 3, "process-wide keys live once, in the process's settings")
        #expect(github.listen.isEmpty, "a named session has no listener unless it says so")
        #expect(github.sessionName == "github", "its fleet key is its name")
        #expect(config.places(of: "github").byKey["client_id"] == "p.conf:10")
        #expect(
            config.places(of: "github").byKey["workers"] == "p.conf:3",
            "a process-wide key's line is every session's"
        )

        let shop = try #require(config.session(named: "shop"))
        #expect(shop.listen == [.hostPort(host: "127.0.0.1", port: 8181)])
        #expect(shop.mount == nil && shop.tokenFormat == .json && shop.refreshOn == [401, 403])
        #expect(config.refreshOn == [401])
        #expect(config.session(named: "default")?.upstream == config.upstream)
        #expect(config.session(named: "nope") == nil)
        // `run` keeps the ${VAR}s of every session's secrets from its child.
        #expect(config.provenance.secretVariables == ["SECRET", "OTHER"])
    }

    @Test func aFileWithoutSectionsHasOnlyTheDefaultSession() {
        let (config, errors, _) = self.read("upstream = https://api.internal\naccess_token = t\n")
        #expect(errors.isEmpty)
        #expect(config.namedSessions.isEmpty)
        #expect(config.sessions.map(\.name) == ["default"])
    }

    @Test func aProcessWideKeyInASectionIsAnErrorNamingItsLine() {
        let (_, errors, _) = self.read(
            Self.twoAPIs + "\nworkers = 2\nadmin_listen = 127.0.0.1:9901\ntls_intercept = on\nrefresh_timeout = 5s\n"
        )
        let message = "is process-wide: set it outside any section, above the first [session …] line"
        #expect(
            errors == [
                "p.conf:21: workers: \(message)",
                "p.conf:22: admin_listen: \(message)",
                "p.conf:23: tls_intercept: \(message)",
                "p.conf:24: refresh_timeout: \(message)",
            ]
        )
    }

    @Test func mountBelongsInASection() {
        let (_, errors, _) = self.read("upstream = https://api.internal\naccess_token = t\nmount = /api\n")
        #expect(
            errors == [
                "p.conf:3: mount: belongs in a [session NAME] section (the keys outside any section are the default session, which takes the paths no mount matches)"
            ]
        )
    }

    struct HeaderCase: CustomTestStringConvertible, Sendable {
        let id: String
        let line: String
        let error: String
        var testDescription: String { self.id }
    }

    static let headerCases: [HeaderCase] = [
        HeaderCase(
            id: "mistyped",
            line: "[sesion api]",
            error: "unknown section '[sesion api]': did you mean '[session api]'?"
        ),
        HeaderCase(
            id: "capitalised",
            line: "[Session api]",
            error: "unknown section '[Session api]': did you mean '[session api]'?"
        ),
        HeaderCase(id: "no word", line: "[api]", error: "unknown section '[api]': did you mean '[session api]'?"),
        HeaderCase(
            id: "unclosed",
            line: "[session api",
            error: "unknown section '[session api': did you mean '[session api]'?"
        ),
        HeaderCase(
            id: "no name",
            line: "[session]",
            error: "a section needs a name: [session NAME] (letters, digits, '-' and '_')"
        ),
        HeaderCase(
            id: "a blank in the name",
            line: "[session my api]",
            error: "invalid session name 'my api' (expected letters, digits, '-' and '_')"
        ),
        HeaderCase(
            id: "a dot in the name",
            line: "[session my.api]",
            error: "invalid session name 'my.api' (expected letters, digits, '-' and '_')"
        ),
        HeaderCase(
            id: "default",
            line: "[session default]",
            error: "'default' is the session of the keys outside any section: give this one another name"
        ),
        HeaderCase(
            id: "no brackets",
            line: "session api",
            error:
                "expected 'key = value' (the line is not shown: it may hold a secret) (did you mean '[session api]'?)"
        ),
        HeaderCase(
            id: "something else",
            line: "[a b c]",
            error: "unknown section '[a b c]' (expected '[session NAME]')"
        ),
    ]

    @Test(arguments: headerCases)
    func aWrongSectionHeaderIsAnErrorAtItsLine(_ header: HeaderCase) {
        let (_, errors, _) = self.read(
            "upstream = https://api.internal\naccess_token = t\n\(header.line)\nupstream = http://127.0.0.1:81\nmount = /x\n"
        )
        #expect(errors.first == "p.conf:3: \(header.error)")
        // The lines below a wrong header are still taken as a section's (not the default session's).
        #expect(errors.count == (header.line.hasPrefix("[") ? 1 : 3), "\(errors)")
    }

    @Test func aSectionGivenTwiceOrEmptyIsAnError() {
        let (_, errors, _) = self.read(
            """
            upstream = https://api.internal
            [session a]
            upstream = http://127.0.0.1:81
            mount = /a
            [session empty]
            # a comment is no key
            [session a]
            mount = /b
            """
        )
        #expect(
            errors == [
                "p.conf:5: [session empty] has no keys (give it upstream with listen or mount, or inject_hosts)",
                "p.conf:7: [session a] given twice, on p.conf:2 and p.conf:7 (keep one)",
                "p.conf:8: mount: given twice, on p.conf:4 and p.conf:8 (keep one)",
            ]
        )
    }

    @Test func aKeyMayBeGivenOncePerSection() {
        let (config, errors, _) = self.read(
            "upstream = https://api.internal\naccess_token = t\n[session a]\nupstream = http://127.0.0.1:81\naccess_token = u\nmount = /a\n"
        )
        #expect(errors.isEmpty, "\(errors)")
        #expect(config.session(named: "a")?.accessToken?.reveal() == "u")
    }

    @Test func aNamedSessionMustReachAnAPI() {
        let (_, errors, _) = self.read(
            """
            upstream = https://api.internal
            access_token = t
            [session nothing]
            access_token = u
            [session nowhere]
            mount = /x
            listen = 127.0.0.1:8181
            [session proxied]
            inject_hosts = api.vendor.test
            access_token = v
            """
        )
        #expect(
            errors == [
                "p.conf:3: [session nothing] reaches no API: set upstream (with listen or mount) or inject_hosts",
                "p.conf:5: [session nowhere] reaches no API: set upstream (with listen or mount) or inject_hosts",
                "p.conf:6: mount: needs upstream in [session nowhere] (where the requests it takes go)",
                "p.conf:7: listen: needs upstream in [session nowhere] (where the requests it takes go)",
            ]
        )
    }

    @Test func aWrongUpstreamLineIsReportedOnceNotAlsoAsASessionReachingNoAPI() {
        let (_, errors, _) = self.read(
            """
            upstream = https://api.internal
            access_token = t
            [sesion typo]
            upstream = api.vendor.test
            mount = /typo
            access_token = u
            """
        )
        #expect(
            errors == [
                "p.conf:3: unknown section '[sesion typo]': did you mean '[session typo]'?",
                "p.conf:4: upstream: 'api.vendor.test' must start with http:// or https:// (expected e.g. https://api.example.com/v2)",
            ]
        )
    }

    struct OverlapCase: CustomTestStringConvertible, Sendable {
        let id: String
        let first: String
        let second: String
        /// The error at the second section's line 6, or nil: no overlap.
        let error: String?
        var testDescription: String { self.id }
    }

    static let overlapCases: [OverlapCase] = [
        OverlapCase(
            id: "one host",
            first: "inject_hosts = api.vendor.test",
            second: "inject_hosts = api.vendor.test",
            error:
                "p.conf:5: inject_hosts: api.vendor.test overlaps api.vendor.test of session a (p.conf:3): a host gets one session's token, so each inject host belongs to one session"
        ),
        OverlapCase(
            id: "a host and the same host on a port",
            first: "inject_hosts = api.vendor.test",
            second: "inject_hosts = api.vendor.test:8443",
            error:
                "p.conf:5: inject_hosts: api.vendor.test:8443 overlaps api.vendor.test of session a (p.conf:3): a host gets one session's token, so each inject host belongs to one session"
        ),
        OverlapCase(
            id: "a wildcard covering a host",
            first: "inject_hosts = a.vendor.test, b.vendor.test",
            second: "inject_hosts = *.vendor.test",
            error:
                "p.conf:5: inject_hosts: *.vendor.test overlaps a.vendor.test of session a (p.conf:3): a host gets one session's token, so each inject host belongs to one session"
        ),
        OverlapCase(
            id: "nested wildcards",
            first: "inject_hosts = *.eu.vendor.test",
            second: "inject_hosts = *.vendor.test",
            error:
                "p.conf:5: inject_hosts: *.vendor.test overlaps *.eu.vendor.test of session a (p.conf:3): a host gets one session's token, so each inject host belongs to one session"
        ),
        OverlapCase(
            id: "the default inject host (the upstream's host:port)",
            first: "upstream = http://127.0.0.1:81\nmount = /a",
            second: "upstream = http://127.0.0.1:81/v2\nmount = /b",
            error:
                "p.conf:6: inject_hosts: 127.0.0.1:81 overlaps 127.0.0.1:81 of session a (p.conf:3): a host gets one session's token, so each inject host belongs to one session"
        ),
        OverlapCase(
            id: "one host, two ports",
            first: "upstream = http://127.0.0.1:81\nmount = /a",
            second: "upstream = http://127.0.0.1:82\nmount = /b",
            error: nil
        ),
        OverlapCase(
            id: "a wildcard and its bare domain",
            first: "inject_hosts = vendor.test",
            second: "inject_hosts = *.vendor.test",
            error: nil
        ),
        OverlapCase(
            id: "one mount",
            first: "upstream = http://127.0.0.1:81\nmount = /api",
            second: "upstream = http://127.0.0.1:82\nmount = /api/",
            error:
                "p.conf:7: mount: /api is also the mount of session a (p.conf:4): one path, one session"
        ),
        OverlapCase(
            id: "nested mounts",
            first: "upstream = http://127.0.0.1:81\nmount = /api",
            second: "upstream = http://127.0.0.1:82\nmount = /api/v2",
            error: nil
        ),
        OverlapCase(
            id: "one listener",
            first: "upstream = http://127.0.0.1:81\nlisten = 127.0.0.1:8181",
            second: "upstream = http://127.0.0.1:82\nlisten = 127.0.0.1:8182, 127.0.0.1:8181",
            error:
                "p.conf:7: listen: 127.0.0.1:8181 is also the listen of session a (p.conf:4): each listener belongs to one session"
        ),
        OverlapCase(
            id: "two listeners on any free port",
            first: "upstream = http://127.0.0.1:81\nlisten = 127.0.0.1:0",
            second: "upstream = http://127.0.0.1:82\nlisten = 127.0.0.1:0",
            error: nil
        ),
        OverlapCase(
            id: "one refresh token file",
            first: "upstream = http://127.0.0.1:81\nmount = /a\nrefresh_token_file = /tmp/rt",
            second: "upstream = http://127.0.0.1:82\nmount = /b\nrefresh_token_file = /tmp/rt",
            error:
                "p.conf:9: refresh_token_file: /tmp/rt is also the refresh_token_file of session a (p.conf:5): each session keeps its own refresh token"
        ),
    ]

    /// Sessions `a` (from line 2) and `b` (after it), beside a default session.
    @Test(arguments: overlapCases)
    func anOverlapBetweenTwoSessionsIsAnErrorNamingBothLines(_ overlap: OverlapCase) {
        let text = "upstream = https://api.internal\n[session a]\n\(overlap.first)\n[session b]\n\(overlap.second)\n"
        let (_, errors, _) = self.read(text)
        #expect(errors == (overlap.error.map { [$0] } ?? []), "\(text)")
    }

    @Test func aNamedSessionsListenOrInjectHostMayNotBeTheDefaultSessions() {
        let (_, errors, _) = self.read(
            """
            upstream = https://api.internal
            listen = 127.0.0.1:8181
            [session a]
            upstream = http://127.0.0.1:81
            listen = 127.0.0.1:8181
            inject_hosts = api.internal, 127.0.0.1:81
            [session b]
            upstream = http://127.0.0.1:82
            listen = 127.0.0.1:8080
            """
        )
        #expect(
            errors == [
                "p.conf:5: listen: 127.0.0.1:8181 is also the listen of session default (p.conf:2): each listener belongs to one session",
                "p.conf:6: inject_hosts: api.internal overlaps api.internal:443 of session default (p.conf:1): a host gets one session's token, so each inject host belongs to one session",
            ]
        )
        let (_, defaultListen, _) = self.read(
            "upstream = https://api.internal\n[session b]\nupstream = http://127.0.0.1:82\nlisten = 127.0.0.1:8080\n"
        )
        #expect(
            defaultListen == [
                "p.conf:4: listen: 127.0.0.1:8080 is also the listen of session default (listen's default): each listener belongs to one session"
            ]
        )
    }

    @Test func twoNamesOfOneEnvironmentVariableAreAnError() {
        let (_, errors, _) = self.read(
            """
            upstream = https://api.internal
            [session my-api]
            upstream = http://127.0.0.1:81
            mount = /a
            [session MY_api]
            upstream = http://127.0.0.1:82
            mount = /b
            """
        )
        #expect(
            errors == [
                "p.conf:5: [session MY_api] and [session my-api] (p.conf:2) would both export BEARER_PROXY_URL_MY_API (bearer-proxy env and run): rename one"
            ]
        )
    }

    @Test func sessionsSharingAStoreNeedTheirOwnFleetKeys() {
        let text = """
            upstream = https://api.internal
            session_store = redis://127.0.0.1:6379
            [session a]
            upstream = http://127.0.0.1:81
            mount = /a
            session_name = default
            """
        let (_, errors, _) = self.read(text)
        #expect(
            errors == [
                "p.conf:6: session_name: 'default' is also the session_name of session default (session_name's default): sessions with one fleet key would share one token (set session_name in one of them)"
            ]
        )
        // Without a store there is no fleet key to share.
        let (_, alone, _) = self.read(
            text.replacingOccurrences(of: "session_store = redis://127.0.0.1:6379\n", with: "")
        )
        #expect(alone.isEmpty, "\(alone)")
    }

    /// One run names every mistake of the file, in file order, whichever session it is in; a line
    /// that failed in one section hides no finding of another.
    @Test func everyErrorOfEverySessionInOneRun() {
        let (_, errors, warnings) = self.read(
            """
            upstream = https://api.internal
            workers = many
            [session a]
            upstream = http://127.0.0.1:81
            mount = /a
            token_url = auth/t
            [session b]
            upstream = http://127.0.0.1:82
            mount = /b
            token_url = http://127.0.0.1:9/t
            [session c]
            upstream = http://127.0.0.1:83
            mount = c
            tls_insecure_skip_verify = true
            """
        )
        #expect(
            errors == [
                "p.conf:2: workers: expected a number from 1 to 256, got 'many'",
                "p.conf:6: token_url: 'auth/t' must start with http:// or https:// (expected e.g. https://auth.example.com/oauth/token)",
                "p.conf:10: grant_type: client_credentials needs client_id (and usually client_secret)",
                "p.conf:13: mount: 'c' does not start with / (expected a path prefix such as /github)",
                "p.conf:14: tls_insecure_skip_verify: is process-wide: set it outside any section, above the first [session …] line",
            ]
        )
        // Each session's warnings at its own lines; a (failed) token_url of a's is not "no token source".
        #expect(warnings.map { $0.components(separatedBy: ": ")[0] } == ["p.conf:1", "p.conf:12"], "\(warnings)")
        #expect(warnings.allSatisfy { $0.contains("no token source") })
    }

    @Test func aProcessWideWarningIsSaidOnceAndASessionsAtItsLine() {
        let (_, errors, warnings) = self.read(
            """
            inject_hosts = 127.0.0.1:1
            access_token = t
            tls_insecure_skip_verify = true
            [session a]
            upstream = http://api.vendor.test
            mount = /a
            access_token = u
            """
        )
        #expect(errors.isEmpty, "\(errors)")
        #expect(
            warnings == [
                "p.conf:3: tls_insecure_skip_verify: certificates and host names of upstreams, token endpoints and the session store are NOT verified: anyone on the network path can read the token (never in production)",
                "p.conf:5: upstream: http:// to api.vendor.test, which is not this machine: tokens cross the network unencrypted (use https://)",
            ]
        )
    }

    @Test func checkPrintsEachSessionUnderItsNameWithSecretsMasked() {
        let (config, _, _) = self.read(Self.twoAPIs)
        let report = ConfigurationLoader.report(config)
        #expect(!report.contains("s3cr3t") && !report.contains("0th3r") && !report.contains("= pw"))
        let sections = report.components(separatedBy: "\n\n")
        #expect(sections.count == 3)
        #expect(!sections[0].contains("mount = "), "the default session has no mount")
        #expect(sections[0].contains("\nworkers = 3\n"))
        #expect(sections[1].hasPrefix("[session github]\n"))
        #expect(sections[1].contains("\nmount = /github"))
        #expect(sections[1].contains("\nclient_secret = <redacted>\n"))
        #expect(!sections[1].contains("workers = "), "process-wide keys are printed once, above")
        #expect(sections[1].contains("\nsession_name = github\n"))
        #expect(sections[2].hasPrefix("[session shop]\nlisten = 127.0.0.1:8181\n"))
        #expect(sections[2].contains("\npassword = <redacted>\n") && sections[2].contains("\nrefresh_on = 401,403\n"))
        // A file without sections reports as it always did.
        let (plain, _, _) = self.read("upstream = https://api.internal\naccess_token = t\n")
        let plainReport = ConfigurationLoader.report(plain)
        #expect(!plainReport.contains("[session") && !plainReport.contains("mount = "))
        #expect(plainReport.split(separator: "\n").count == Configuration.keys.count - 1)
    }

    @Test func hostPatternsOverlapWhenOneHostCanMatchBoth() {
        func overlaps(_ a: String, _ b: String) -> Bool {
            HostPattern.parse(a)!.overlaps(HostPattern.parse(b)!)
        }
        #expect(overlaps("h.test", "h.test") && overlaps("h.test", "h.test:1") && overlaps("h.test:1", "h.test"))
        #expect(overlaps("h.test:1", "h.test:1") && !overlaps("h.test:1", "h.test:2"))
        #expect(overlaps("*.test", "h.test") && overlaps("h.test:1", "*.test") && !overlaps("*.test", "test"))
        #expect(overlaps("*.test", "*.a.test") && overlaps("*.a.test", "*.test") && !overlaps("*.a.test", "*.b.test"))
        #expect(!overlaps("h.test", "g.test") && !overlaps("*.test", "h.tes"))
    }
}
