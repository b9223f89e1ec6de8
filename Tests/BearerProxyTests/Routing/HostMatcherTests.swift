import BearerHTTP
import BearerTestSupport
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// Routing compares host bytes in place: the same answers as the string patterns, whatever the case.
@Suite struct HostMatcherTests {
    func matches(_ patterns: [HostPattern], _ host: String, _ port: Int) -> Bool {
        let bytes = Array(host.utf8)
        return bytes.withUnsafeBytes { HostMatcher(patterns).matches($0, host: 0..<bytes.count, port: port) }
    }

    @Test(arguments: [
        ("api.example.com", 443, true),
        ("API.Example.COM", 8080, true),
        ("api.example.co", 443, false),
        ("xapi.example.com", 443, false),
        ("v2.internal.test", 80, true),
        ("internal.test", 80, false),
        ("[::1]", 9000, true),
        ("[::1]", 9001, false),
        ("127.0.0.1", 9000, false),
    ])
    func matchesLikeTheStringPatterns(_ host: String, _ port: Int, _ expected: Bool) {
        let patterns: [HostPattern] = [
            .host("api.example.com"), .subdomains(of: "internal.test"), .hostAndPort("::1", 9000),
        ]
        #expect(self.matches(patterns, host, port) == expected)
    }

    @Test func anAbsoluteFormRequestToTheUpstreamInAnyCaseGetsTheSharedTarget() throws {
        var configuration = Configuration()
        let upstream = try HTTPURL.parse("https://api.example.com/v2").get()
        configuration.upstream = upstream
        let router = Router(
            configuration: configuration,
            sessions: [.standalone(configuration)],
            names: ProxyNames(boundAddresses: [], acceptHosts: [])
        )
        var parser = HTTPRequestParser()
        let bytes = Array("GET http://API.EXAMPLE.com/items HTTP/1.1\r\nHost: API.EXAMPLE.com\r\n\r\n".utf8)
        guard case .head(let head, _) = try bytes.withUnsafeBytes({ try parser.next($0) }) else {
            Issue.record("no head")
            return
        }
        guard case .forward(let target, let path) = router.route(head) else {
            Issue.record("not forwarded")
            return
        }
        #expect(target.origin == upstream.origin)
        #expect(target.injectsToken)
        #expect(target.pathPrefix.isEmpty)
        guard case .absolute(let range) = path else {
            Issue.record("expected the absolute-form path, got \(path)")
            return
        }
        #expect(head.string(range) == "/items")
    }
}
