import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// A session's `allow` and `deny` against the built binary (docs/untrusted-programs.md): a refused
/// request is a 403 naming the session and the rule, and nothing of it reaches the upstream, through
/// every way in.
@Suite struct RequestRulesBinaryTests {
    static let aRules = "allow = GET /whoami, GET /v1/*, POST /v1/items\ndeny = GET /v1/admin"
    static let refusedBody =
        "bearer-proxy: DELETE /v1/items/7 is not allowed for session a (allow = GET /whoami, GET /v1/*, POST /v1/items)\n"

    /// Through a's mount (base URL), by host (forward proxy), and a session without rules beside it.
    @Test func refusedRequestsReachNothingAndAllowedOnesGetTheToken() throws {
        let proxy = try ThreeAPIs("admin_listen = 127.0.0.1:0", sessionLines: ["a": Self.aRules])
        let aUpstream = proxy["a"].upstream
        #expect(try proxy.get("/a/whoami").status == 200)
        #expect(proxy.lastRequest("a")?.token == "Bearer a-access-1")
        let seenBefore = aUpstream.requests.count

        let refused = try httpRequest(proxy.main, "DELETE /a/v1/items/7 HTTP/1.1\r\nHost: \(proxy.main)\r\n\r\n")
        #expect(refused.status == 403)
        #expect(refused.text == Self.refusedBody)
        // By host, as an http_proxy client sends it.
        let byHost = try proxy.get(proxy["a"].upstream.baseURL + "/v1/admin")
        #expect(byHost.status == 403)
        #expect(byHost.text == "bearer-proxy: GET /v1/admin is not allowed for session a (deny = GET /v1/admin)\n")
        // Path tricks, as the bytes are sent (no client normalises them).
        let tricks = [
            "/a/v1/../admin", "/a/v1/%2e%2e/admin", "/a/v1/%2E%2E/%2e%2e/whoami/x", "/a//v1/admin", "/a/v1/./admin",
            "/a/v1/a%2Fb", "/a/v1/items/7", "/a/admin?x=/v1/items",
        ]
        for target in tricks {
            let response = try proxy.get(target)
            #expect(response.status == 403, "\(target): \(response.text)")
        }
        let lowerCase = try httpRequest(proxy.main, "get /a/whoami HTTP/1.1\r\nHost: \(proxy.main)\r\n\r\n")
        #expect(lowerCase.status == 403, "a method is case-sensitive")
        #expect(aUpstream.requests.count == seenBefore, "nothing refused reached the upstream")

        // Allowed after normalisation: the dot segments and double slashes are the API's to resolve.
        for target in ["/a/v1/items", "/a/v1/./items", "/a/x/../v1/items?id=7", "/a//whoami"] {
            let response = try proxy.get(target)
            #expect(response.status == 200, "\(target): \(response.text)")
        }
        // The default session has no rules.
        #expect(try proxy.get("/v1/admin").status == 200)

        let admin = try #require(proxy.admin)
        let metrics = try httpRequest(admin, "GET /metrics HTTP/1.1\r\nHost: \(admin)\r\n\r\n").text
        let allowRule = "allow = GET /whoami, GET /v1/*, POST /v1/items"
        #expect(metrics.contains("bearer_proxy_requests_refused_total{session=\"a\",rule=\"\(allowRule)\"} 8\n"))
        #expect(
            metrics.contains("bearer_proxy_requests_refused_total{session=\"a\",rule=\"deny = GET /v1/admin\"} 3\n")
        )
    }

    @Test(.requires(.curl))
    func curlThroughAnInterceptedTunnelIsRefusedBeforeTheUpstream() throws {
        let setup = try InterceptTunnelBinaryTests.Setup("allow = GET /v1/*")
        let curl = InterceptTunnelBinaryTests.curl
        let base = [
            curl, "-sS", "--proxy", "http://\(setup.address)", "--cacert", setup.rootFile, "-w", "\n%{http_code}",
        ]
        let allowed = try InterceptTunnelBinaryTests.run(base + ["\(setup.url)/v1/items"], environment: [:])
        #expect(allowed.standardOutput.hasSuffix("\n200"), "curl: \(allowed.standardError)")
        let seen = setup.upstream.requests.count
        let refused = try InterceptTunnelBinaryTests.run(
            base + ["-X", "DELETE", "\(setup.url)/v1/items/7"],
            environment: [:]
        )
        #expect(
            refused.standardOutput
                == "bearer-proxy: DELETE /v1/items/7 is not allowed for session default (allow = GET /v1/*)\n\n403"
        )
        let tricks = try InterceptTunnelBinaryTests.run(
            base + ["--path-as-is", "\(setup.url)/v1/../admin"],
            environment: [:]
        )
        #expect(tricks.standardOutput.hasSuffix("\n403"))
        #expect(setup.upstream.requests.count == seen, "nothing refused reached the upstream")
    }
}
