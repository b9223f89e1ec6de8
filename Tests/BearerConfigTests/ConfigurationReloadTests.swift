import BearerCore
import Testing

@testable import BearerConfig

/// What SIGHUP's re-read applies and what it leaves for a restart (issue 32, point 2).
@Suite struct ConfigurationReloadTests {
    static func load(_ text: String) throws -> Configuration {
        let (configuration, diagnostics) = ConfigurationLoader.read(text, fileName: "proxy.conf")
        try #require(diagnostics.errors.isEmpty, "\(diagnostics.errors)")
        return configuration
    }

    static let running = """
        listen = 127.0.0.1:8080
        log_level = info

        [session github]
        mount = /github
        upstream = https://api.github.com
        token_url = https://auth.example.com/token
        client_id = proxy
        client_secret = wrong-secret
        scope = read

        [session internal]
        mount = /internal
        upstream = https://internal.example.com
        access_token = static-one
        """

    @Test func tokenSourceKeysSecretsAndLoggingApplyAndNothingWaitsForARestart() throws {
        let running = try Self.load(Self.running)
        let new = try Self.load(
            Self.running
                .replacingOccurrences(of: "wrong-secret", with: "right-secret")
                .replacingOccurrences(of: "scope = read", with: "scope = read write\nrefresh_skew = 1m")
                .replacingOccurrences(of: "static-one", with: "static-two")
                .replacingOccurrences(of: "log_level = info", with: "log_level = debug\naccess_log = stderr")
        )
        let reload = ConfigurationReload(running: running, new: new)
        #expect(reload.needsRestart == [])
        let github = try #require(reload.applied.session(named: "github"))
        #expect(github.clientSecret == Secret("right-secret"))
        #expect(github.scope == "read write")
        #expect(github.refreshSkew == .seconds(60))
        #expect(reload.applied.session(named: "internal")?.accessToken == Secret("static-two"))
        #expect(reload.applied.logLevel == .debug)
        #expect(reload.applied.accessLog == .standardError)
    }

    @Test func listenersRoutesAndTheSetOfSessionsWaitForARestartAndKeepTheirRunningValues() throws {
        let running = try Self.load(Self.running)
        let new = try Self.load(
            Self.running
                .replacingOccurrences(of: "listen = 127.0.0.1:8080", with: "listen = 127.0.0.1:9090\nworkers = 3")
                .replacingOccurrences(of: "https://api.github.com", with: "https://api.github.example")
                .replacingOccurrences(of: "[session internal]", with: "[session intern]")
                .replacingOccurrences(of: "scope = read", with: "scope = admin")
        )
        let reload = ConfigurationReload(running: running, new: new)
        #expect(
            reload.needsRestart == [
                "listen", "workers", "[session github] upstream", "[session github] inject_hosts",
                "[session internal] (removed)",
                "[session intern] (a new session)",
            ]
        )
        #expect(reload.applied.listen == running.listen)
        #expect(reload.applied.workers == running.workers)
        #expect(reload.applied.session(named: "github")?.upstream == running.session(named: "github")?.upstream)
        #expect(reload.applied.session(named: "github")?.scope == "admin", "what can apply still does")
        #expect(reload.applied.sessions.map(\.name) == ["default", "github", "internal"])
    }

    /// Every key that holds a secret applies live: `--check` shows secrets as `<redacted>`, so a
    /// change to one could not be named as waiting for a restart.
    @Test func everySecretKeyAppliesLive() throws {
        var running = try Self.load("upstream = https://api.example.com")
        var new = running
        new.accessToken = Secret("a")
        new.refreshToken = Secret("b")
        new.clientSecret = Secret("c")
        new.password = Secret("d")
        #expect(
            Configuration.keys.filter(\.isSecret).map(\.name).sorted() == [
                "access_token", "client_secret", "password", "refresh_token",
            ]
        )
        running.defaultSession.takeLiveSettings(from: new.defaultSession)
        #expect(running.accessToken == Secret("a"))
        #expect(running.refreshToken == Secret("b"))
        #expect(running.clientSecret == Secret("c"))
        #expect(running.password == Secret("d"))
    }
}
