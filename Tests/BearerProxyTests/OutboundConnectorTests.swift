import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Testing

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

/// A TLS factory that cannot make a connection (as when OpenSSL runs out of memory).
struct FailingTLSFactory: TLSConnectionFactory {
    func makeConnection(serverName: String?, sessionKey: String?) -> TLSConnection? { nil }
}

/// The one way out fails closed: what should go over TLS never goes in clear text.
@Suite struct OutboundConnectorTests {
    @Test func anHTTPSTokenEndpointIsNeverSentTheRequestInClearText() throws {
        // The token server speaks plain HTTP on the port the https:// URL names: a request in clear
        // text would reach it (and be answered), a request over TLS cannot.
        let fixture = try SessionFixture(tlsFactory: FailingTLSFactory()) { config, server in
            config.tokenURL = try? HTTPURL.parse("https://127.0.0.1:\(server.server.port)/oauth/token").get()
            config.refreshTimeout = .seconds(1)
        }
        let response = try fixture.get("/needs-token")
        #expect(response.status == 502)
        #expect(response.text.contains("TLS is required"))
        #expect(fixture.tokenServer.callCount == 0)
        fixture.expectNoSecretsInLogs()
    }

    @Test func anHTTPSUpstreamIsNeverSentTheRequestInClearText() throws {
        let upstream = MockUpstream(group: mockGroup)
        try upstream.start()
        defer { upstream.stop() }
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 0)]
        configuration.upstream = try HTTPURL.parse("https://127.0.0.1:\(upstream.port)").get()
        configuration.accessToken = Secret(ProxyFixture.token)
        configuration.workers = 1
        let proxy = try ProxyServer.start(
            configuration: configuration,
            logger: .silent,
            tlsFactory: FailingTLSFactory()
        )
        defer { proxy.shutdown() }
        let port = proxy.boundAddresses[0].port ?? 0
        let response = try httpRequest(
            proxy.boundAddresses[0],
            "GET /secret HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        )
        #expect(response.status == 502)
        #expect(response.text.contains("TLS"))
        #expect(upstream.requests.isEmpty)
        #expect(upstream.server.handledRequests.load(ordering: .relaxed) == 0)
    }
}
