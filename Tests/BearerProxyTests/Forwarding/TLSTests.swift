import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

@Suite struct TLSTests {
    /// A proxy in front of an HTTPS mock API.
    func fixture(
        certificate: String = "server",
        host: String = "127.0.0.1",
        _ configure: @escaping (inout Configuration) -> Void = { $0.caFile = TLSFixtures.caFile }
    ) throws -> (ProxyFixture, MockUpstream) {
        let upstream = MockUpstream(
            group: mockGroup,
            acceptedTokens: [ProxyFixture.token],
            tls: try TLSFixtures.server(certificate)
        )
        try upstream.start()
        let fixture = try ProxyFixture { config in
            config.upstream = try? HTTPURL.parse("https://\(host):\(upstream.port)").get()
            configure(&config)
        }
        return (fixture, upstream)
    }

    @Test func forwardsToAnHTTPSUpstreamTrustedThroughCAFile() throws {
        let (fixture, upstream) = try self.fixture()
        defer { upstream.stop() }
        let response = try fixture.get("/secure")
        #expect(response.status == 200)
        #expect(upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
        #expect(upstream.requests.last?.header("host") == "127.0.0.1:\(upstream.port)")
    }

    @Test func verifiesTheHostNameAgainstTheCertificate() throws {
        let (fixture, upstream) = try self.fixture(host: "localhost")
        defer { upstream.stop() }
        #expect(try fixture.get("/by-name").status == 200)
    }

    @Test func refusesAnUntrustedCertificateWith502() throws {
        let (fixture, upstream) = try self.fixture { _ in }
        defer { upstream.stop() }
        let response = try fixture.get("/secure")
        #expect(response.status == 502)
        #expect(response.text.contains("certificate not trusted"))
        #expect(response.text.contains("ca_file"))
        #expect(upstream.requests.isEmpty, "nothing may be sent over an unverified connection")
    }

    @Test func refusesAHostNameMismatchWith502() throws {
        let (fixture, upstream) = try self.fixture(certificate: "wrong-host")
        defer { upstream.stop() }
        let response = try fixture.get("/secure")
        #expect(response.status == 502)
        #expect(response.text.contains("host name mismatch"))
        #expect(upstream.requests.isEmpty)
    }

    @Test func skipsVerificationWhenToldAndWarns() throws {
        let (fixture, upstream) = try self.fixture(certificate: "wrong-host") { $0.tlsInsecureSkipVerify = true }
        defer { upstream.stop() }
        #expect(try fixture.get("/insecure").status == 200)
        #expect(
            fixture.logs.capturedLines.contains { $0.contains(" warn ") && $0.contains("tls_insecure_skip_verify") }
        )
    }

    @Test func sendsPlainAbsoluteFormRequestsToAnHTTPSUpstreamOverTLS() throws {
        let (fixture, upstream) = try self.fixture()
        defer { upstream.stop() }
        let authority = "127.0.0.1:\(upstream.port)"
        let response = try fixture.send("GET http://\(authority)/via-proxy HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(response.status == 200)
        #expect(upstream.requests.last?.target == "/via-proxy")
        #expect(upstream.requests.last?.header("authorization") == "Bearer \(ProxyFixture.token)")
    }

    @Test func reportsAPlainHTTPServerBehindAnHTTPSURL() throws {
        let plain = MockUpstream(group: mockGroup)
        try plain.start()
        defer { plain.stop() }
        let fixture = try ProxyFixture { $0.upstream = try? HTTPURL.parse("https://127.0.0.1:\(plain.port)").get() }
        let response = try fixture.get("/x")
        #expect(response.status == 502)
        #expect(response.text.contains("TLS"))
    }

    @Test func streamsA20MBResponseOverTLS() throws {
        let (fixture, upstream) = try self.fixture()
        defer { upstream.stop() }
        let client = try fixture.client()
        client.send("GET /bytes/20000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.body.count == 20_000_000)
        #expect(countMockPatternMismatches(response.body) == 0)
        client.send("GET /chunked/3000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let chunked = try client.readResponse()
        #expect(chunked.body.count == 3_000_000)
        #expect(countMockPatternMismatches(chunked.body) == 0)
    }

    @Test func uploadsOverTLS() throws {
        let (fixture, upstream) = try self.fixture()
        defer { upstream.stop() }
        let body = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let client = try fixture.client()
        client.send(Array("PUT /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        let response = try client.readResponse()
        #expect(response.body == body)
    }

    @Test func reusesPooledTLSConnections() throws {
        let (fixture, upstream) = try self.fixture()
        defer { upstream.stop() }
        let client = try fixture.client()
        for index in 0..<30 {
            client.send("GET /keep/\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        #expect(upstream.requests.count == 30)
        #expect(upstream.server.acceptedConnections.load(ordering: .relaxed) <= 2)
    }

    @Test func resumesTLSSessionsOnNewConnections() throws {
        // An upstream that closes after every response, so each request needs a new TLS connection.
        let closing = MockHTTPServer(group: mockGroup, tls: try TLSFixtures.server()) { _ in
            MockResponse(
                status: 200,
                body: .raw(
                    Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8),
                    thenClose: true
                )
            )
        }
        try closing.start()
        defer { closing.stop() }
        let fixture = try ProxyFixture { config in
            config.upstream = try? HTTPURL.parse("https://127.0.0.1:\(closing.port)").get()
            config.caFile = TLSFixtures.caFile
        }
        for _ in 0..<4 { #expect(try fixture.get("/r").text == "ok") }
        #expect(closing.acceptedConnections.load(ordering: .relaxed) == 4)
        #expect(
            closing.resumedTLSSessions.load(ordering: .relaxed) >= 2,
            "new connections did not resume the TLS session"
        )
    }

    @Test func refreshesAgainstAnHTTPSTokenEndpoint() throws {
        let authority = MockTokenAuthority()
        let tokenServer = MockTokenServer(group: mockGroup, authority: authority, tls: try TLSFixtures.server())
        try tokenServer.start()
        defer { tokenServer.stop() }
        let upstream = MockUpstream(group: mockGroup, authority: authority)
        try upstream.start()
        defer { upstream.stop() }
        let fixture = try ProxyFixture { config in
            config.upstream = try? HTTPURL.parse(upstream.baseURL).get()
            config.accessToken = Secret("stale")
            config.tokenURL = try? HTTPURL.parse(tokenServer.url).get()
            config.grantType = .clientCredentials
            config.clientID = "c"
            config.caFile = TLSFixtures.caFile
        }
        #expect(tokenServer.url.hasPrefix("https://"))
        let response = try fixture.get("/x")
        #expect(response.status == 200)
        #expect(tokenServer.callCount == 1)
        #expect(upstream.requests.last?.header("authorization") == "Bearer mock-access-1")
    }

    @Test func namesAnUntrustedTokenEndpoint() throws {
        let tokenServer = MockTokenServer(group: mockGroup, tls: try TLSFixtures.server())
        try tokenServer.start()
        defer { tokenServer.stop() }
        let fixture = try ProxyFixture(acceptedTokens: ["x"]) { config in
            config.accessToken = Secret("stale")
            config.tokenURL = try? HTTPURL.parse(tokenServer.url).get()
            config.clientID = "c"
            config.refreshTimeout = .seconds(3)
        }
        let response = try fixture.get("/x")
        #expect(response.status == 502)
        #expect(response.text.contains("certificate not trusted"))
    }

    @Test func anUnreadableCAFileStopsTheStart() throws {
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 0)]
        configuration.upstream = try HTTPURL.parse("https://127.0.0.1:1").get()
        configuration.caFile = "/nonexistent/ca.pem"
        #expect(throws: ProxyServer.StartError.self) {
            try ProxyServer.start(configuration: configuration, logger: .silent)
        }
    }
}
