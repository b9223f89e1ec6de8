import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Testing

/// `resource_url` instead of `issuer`: the API's RFC 9728 metadata names the authorization server,
/// whose RFC 8414 metadata gives the endpoints; a document naming another resource is refused.
@Suite(.requires(.pythonAuthlib)) struct ResourceMetadataTests {
    static func config(resourceURL: String, upstream: String, server: AuthlibServer) -> String {
        temporaryFile(
            """
            upstream = \(upstream)
            resource_url = \(resourceURL)
            client_id = \(server.clientID)
            client_secret = \(server.clientSecret)

            """
        )
    }

    @Test func resourceURLAloneFindsTheIssuerAndServesTheAPI() throws {
        let server = try AuthlibServer(mode: .rfc8414, issuerPath: "/tenant")
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let config = Self.config(resourceURL: server.resourceURL, upstream: upstream.baseURL, server: server)
        let check = try ProxyProcess.run(["--check", "--config", config])
        #expect(check.status == 0, "\(check.stderr)")
        // Each names the document it came from.
        let source = "http://127.0.0.1:\(server.port)/.well-known/oauth-protected-resource/api"
        #expect(check.stdout.contains("\nissuer = \(server.issuer)  # discovered from \(source)\n"), "\(check.stdout)")
        #expect(
            check.stdout.contains("\nresource = \(server.resourceURL)  # discovered from \(source)\n"),
            "\(check.stdout)"
        )
        try DiscoveryTests.expectServes(config: config, upstream: upstream, server: server, tokensIssued: 1)
    }

    @Test func aDocumentNamingAnotherResourceIsRefused() throws {
        let server = try AuthlibServer(mode: .rfc8414, resource: "https://other.example.com/api")
        let config = Self.config(resourceURL: server.resourceURL, upstream: "http://127.0.0.1:9", server: server)
        let result = try ProxyProcess.run(["--check", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(config):2: resource_url: the metadata at http://127.0.0.1:\(server.port)/.well-known/oauth-protected-resource/api names 'https://other.example.com/api', not the configured '\(server.resourceURL)' (they must be equal, RFC 9728 §3.3)\n"
        )
    }

    @Test func noResourceMetadataNamesTheAddressTried() throws {
        let server = try AuthlibServer(mode: .rfc8414)
        let resource = "http://127.0.0.1:\(server.port)/elsewhere"
        let config = Self.config(resourceURL: resource, upstream: "http://127.0.0.1:9", server: server)
        let result = try ProxyProcess.run(["--check", "--config", config])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: \(config):2: resource_url: no protected resource metadata at http://127.0.0.1:\(server.port)/.well-known/oauth-protected-resource/elsewhere (404)\n"
        )
    }
}
