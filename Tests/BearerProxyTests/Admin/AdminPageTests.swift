import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// The admin page as bytes on the wire: served from the binary under a strict policy, no resource
/// from elsewhere, and its own origin let through the admin's Origin check where any other is not.
@Suite struct AdminPageTests {
    let fixture: SessionFixture
    let port: Int

    init() throws {
        self.fixture = try SessionFixture { config, _ in config.adminListen = .hostPort(host: "127.0.0.1", port: 0) }
        self.port = try #require(self.fixture.proxy.adminAddress?.port)
    }

    func admin(_ method: String, _ path: String, headers: String = "") throws -> BlockingHTTPClient.Response {
        let address = try #require(self.fixture.proxy.adminAddress)
        return try httpRequest(
            address,
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(self.port)\r\n\(headers)Content-Length: 0\r\n\r\n"
        )
    }

    static let policy =
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    @Test(arguments: [
        ("/", "text/html; charset=utf-8"), ("/app.js", "text/javascript; charset=utf-8"),
        ("/app.css", "text/css; charset=utf-8"),
    ])
    func eachPartIsServedUnderTheStrictPolicy(path: String, contentType: String) throws {
        let response = try self.admin("GET", path)
        #expect(response.status == 200)
        #expect(response.header("content-type") == contentType)
        #expect(response.header("content-security-policy") == Self.policy)
        #expect(response.header("x-content-type-options") == "nosniff")
        // Nothing from elsewhere: no URL with a scheme in any part.
        #expect(
            !response.text.contains("http://") && !response.text.contains("https://")
                && !response.text.contains("//cdn")
        )
    }

    @Test func thePageHasNoInlineScriptAndLoadsItsOwn() throws {
        let page = try self.admin("GET", "/").text
        let scripts = page.components(separatedBy: "<script").dropFirst()
        #expect(scripts.count == 1)
        #expect(scripts.allSatisfy { $0.hasPrefix(#" src="/app.js""#) })
        #expect(
            !page.contains("onclick=") && !page.contains("onload="),
            "no inline handler: the policy would refuse it"
        )
        let script = try self.admin("GET", "/app.js").text
        #expect(script.contains(#"new EventSource("/events")"#))
        #expect(!script.contains("innerHTML"))
    }

    /// The page's buttons POST from the page's own origin; a page elsewhere (another host name, as a
    /// rebinding page has, or another port) is refused as before.
    @Test func theAdminTakesItsOwnOriginAndNoOther() throws {
        #expect(fixture.waitForTokenCalls(1))
        #expect(waitUntil { fixture.proxy.runtime.session.status.state == "ready" })
        for origin in ["http://127.0.0.1:\(self.port)", "http://localhost:\(self.port)"] {
            let response = try self.admin(
                "POST",
                "/refresh",
                headers: "Origin: \(origin)\r\nSec-Fetch-Site: same-origin\r\n"
            )
            #expect(response.status == 200, "\(origin): \(response.text)")
        }
        for origin in [
            "http://evil.example:\(self.port)", "http://127.0.0.1:\(self.port + 1)", "https://127.0.0.1:\(self.port)",
            "http://127.0.0.1",
        ] {
            let response = try self.admin("POST", "/logout", headers: "Origin: \(origin)\r\n")
            #expect(response.status == 403, "\(origin)")
        }
        #expect(fixture.proxy.runtime.session.status.state == "ready")
    }

    @Test func exchangesSayWhenTheAuditLogIsOff() throws {
        let response = try self.admin("GET", "/exchanges")
        #expect(response.status == 200)
        #expect(response.text == #"{"audit_log":false,"exchanges":[]}"# + "\n")
    }
}
