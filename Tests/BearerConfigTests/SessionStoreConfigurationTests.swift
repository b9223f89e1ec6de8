import BearerCore
import Testing

@testable import BearerConfig

/// `session_store`, `session_name`, `session_store_fallback`: parsed, checked with clear errors, and
/// shown without the store's password.
@Suite struct SessionStoreConfigurationTests {
    func load(_ text: String) throws(ConfigurationError) -> Configuration {
        try Configuration.build(from: try ConfigFileParser.parse(text, fileName: "proxy.conf", environment: [:]))
    }

    struct URLCase: CustomStringConvertible, Sendable {
        var text: String
        var endpoint: RedisEndpoint
        var shown: String
        var description: String { self.text }
    }

    static let urls: [URLCase] = [
        URLCase(
            text: "redis://127.0.0.1:6379",
            endpoint: RedisEndpoint(host: "127.0.0.1"),
            shown: "redis://127.0.0.1:6379"
        ),
        URLCase(
            text: "redis://redis.internal",
            endpoint: RedisEndpoint(host: "redis.internal"),
            shown: "redis://redis.internal:6379"
        ),
        URLCase(
            text: "rediss://fleet:s3cr%40t@Redis.Internal:6380/2",
            endpoint: RedisEndpoint(
                usesTLS: true,
                host: "redis.internal",
                port: 6380,
                username: "fleet",
                password: Secret("s3cr@t"),
                database: 2
            ),
            shown: "rediss://fleet:<redacted>@redis.internal:6380/2"
        ),
        URLCase(
            text: "redis://:only-a-password@[::1]:7000/",
            endpoint: RedisEndpoint(host: "::1", port: 7000, password: Secret("only-a-password")),
            shown: "redis://:<redacted>@[::1]:7000"
        ),
        URLCase(
            text: "REDIS://h:1/15",
            endpoint: RedisEndpoint(host: "h", port: 1, database: 15),
            shown: "redis://h:1/15"
        ),
    ]

    @Test(arguments: urls)
    func parsesStoreURLs(_ url: URLCase) throws {
        let config = try self.load("session_store = \(url.text)")
        #expect(config.sessionStore.endpoint == url.endpoint)
        #expect(config.sessionStore.endpoint?.description == url.shown)
    }

    struct BadValue: CustomStringConvertible, Sendable {
        var text: String
        var message: String
        var description: String { self.text }
    }

    static let badValues: [BadValue] = [
        BadValue(
            text: "session_store = http://:pw-in-url@h:6379",
            message:
                "proxy.conf:1: session_store: the URL must start with redis:// or rediss:// (expected redis://[user:password@]host:port[/db] or rediss://…)"
        ),
        BadValue(
            text: "session_store = redis://fleet:pw-in-url@h:99999",
            message:
                "proxy.conf:1: session_store: the URL has an invalid host or port (expected redis://[user:password@]host:port[/db] or rediss://…)"
        ),
        BadValue(
            text: "session_store = redis://fleet@h",
            message:
                "proxy.conf:1: session_store: the URL names a user but no password (write user:password@) (expected redis://[user:password@]host:port[/db] or rediss://…)"
        ),
        BadValue(
            text: "session_store = redis://:pw-in-url@h/db",
            message:
                "proxy.conf:1: session_store: the URL has an invalid database number (expected /0, /1, …) (expected redis://[user:password@]host:port[/db] or rediss://…)"
        ),
        BadValue(
            text: "session_store = redis://:pw-in-url@h?timeout=1",
            message:
                "proxy.conf:1: session_store: the URL must not have a query or fragment (expected redis://[user:password@]host:port[/db] or rediss://…)"
        ),
        BadValue(
            text: "session_name = team a",
            message: "proxy.conf:1: session_name: expected 1 to 64 letters, digits, '.', '_' or '-', got 'team a'"
        ),
        BadValue(
            text: "session_name = {a}",
            message: "proxy.conf:1: session_name: expected 1 to 64 letters, digits, '.', '_' or '-', got '{a}'"
        ),
        BadValue(
            text: "session_store_fallback = retry",
            message: "proxy.conf:1: session_store_fallback: expected local or fail, got 'retry'"
        ),
    ]

    @Test(arguments: badValues)
    func rejectsBadValuesWithoutRepeatingAPassword(_ bad: BadValue) {
        do {
            _ = try self.load(bad.text)
            Issue.record("expected an error")
        } catch {
            #expect(error.description == bad.message)
            #expect(!error.description.contains("pw-in-url"))
        }
    }

    @Test func defaultsToNoStoreTheDefaultNameAndLocalFallback() throws {
        let config = try self.load("upstream = http://h")
        #expect(config.sessionStore.endpoint == nil)
        #expect(config.sessionName == "default")
        #expect(config.sessionStore.fallback == .local)
        let fleet = try self.load("session_name = team-a.prod_2\nsession_store_fallback = fail")
        #expect(fleet.sessionName == "team-a.prod_2")
        #expect(fleet.sessionStore.fallback == .fail)
    }

    @Test func checkShowsTheStoreWithoutItsPassword() throws {
        let config = try self.load("upstream = http://h:81\nsession_store = rediss://fleet:store-secret-9@h:6380/1")
        let report = ConfigurationLoader.report(config)
        #expect(report.contains("session_store = rediss://fleet:<redacted>@h:6380/1\n"))
        #expect(report.contains("session_name = default\n"))
        #expect(report.contains("session_store_fallback = local\n"))
        #expect(!report.contains("store-secret-9"))
    }
}
