import BearerDemo
import BearerTestSupport
import Foundation
import Testing

/// HTTP/2 towards nginx, the server most APIs sit behind, through the built binary: over TLS, where
/// `upstream_http2 = auto` offers ALPN `h2, http/1.1` and nginx picks h2, and in clear text with prior
/// knowledge (`on`). nginx passes each request to a mock API that checks the token, and says in
/// `x-front-protocol` and `x-front-connection` how the request reached it.
@Suite(.requires(.nginx), .requires(.curl)) struct UpstreamNginxTests {
    final class Setup {
        let authority = MockTokenAuthority()
        let tokenServer: MockTokenServer
        let backend: MockUpstream
        let nginx: NginxServer
        let proxy: ProxyProcess
        let port: Int

        init(tls: Bool, _ setting: String) throws {
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority)
            try self.tokenServer.start()
            self.backend = MockUpstream(group: e2eMockGroup, authority: self.authority)
            try self.backend.start()
            self.nginx = try NginxServer(backendPort: self.backend.server.port, tls: tls, in: temporaryDirectory())
            let upstream = tls ? "https://localhost:\(self.nginx.port)" : "http://127.0.0.1:\(self.nginx.port)"
            let config = temporaryFile(
                """
                listen = 127.0.0.1:0
                upstream = \(upstream)
                \(tls ? "ca_file = \(TLSFixtures.caFile)" : "")
                token_url = \(self.tokenServer.url)
                client_id = e2e-client
                client_secret = e2e-secret
                workers = 1
                \(setting)
                """
            )
            self.proxy = try ProxyProcess(["--config", config])
            let listening = try #require(self.proxy.waitUntilListening())
            self.port = try tcpPort(of: listening)
        }

        /// curl, the URLs in parallel; a line per transfer: the status, the protocol nginx saw and
        /// its connection number.
        func get(_ count: Int, _ options: [String] = []) throws -> [String] {
            var arguments = [ExternalTools.curl, "-sS", "--max-time", "20", "-Z", "--parallel-immediate"] + options
            arguments += ["-w", "%{http_code} %header{x-front-protocol} %header{x-front-connection}\n"]
            for _ in 0..<count { arguments += ["-o", "/dev/null", "http://127.0.0.1:\(self.port)/whoami"] }
            let outcome = try ExternalTools.run(arguments, timeout: .seconds(30))
            return outcome.standardOutput.split(separator: "\n").map(String.init).sorted()
        }

        func stop() {
            self.proxy.signal(SIGTERM)
            _ = self.proxy.waitForExit()
            self.nginx.stop()
            self.backend.stop()
            self.tokenServer.stop()
        }
    }

    /// A revocation under 8 concurrent requests (HTTP/1.1 and HTTP/2 clients alike) costs one token
    /// call; every request is answered 200, having reached nginx over HTTP/2 on one connection, each
    /// with the token the mock API accepts.
    @Test(arguments: [(true, "upstream_http2 = auto"), (false, "upstream_http2 = on")])
    func aRevocationCostsOneTokenCallOverHTTP2(tls: Bool, setting: String) throws {
        let setup = try Setup(tls: tls, setting)
        let first = try setup.get(1)
        let connection = try #require(first.first?.split(separator: " ").last.map(String.init))
        let callsBefore = setup.tokenServer.callCount
        setup.authority.revokeAll()
        let overHTTP1 = try setup.get(8)
        let overHTTP2 = try setup.get(8, ["--http2-prior-knowledge"])
        let calls = setup.tokenServer.callCount - callsBefore
        let recorded = setup.backend.requests
        setup.stop()
        #expect(first == ["200 HTTP/2.0 \(connection)"])
        #expect(overHTTP1 == Array(repeating: "200 HTTP/2.0 \(connection)", count: 8))
        #expect(overHTTP2 == Array(repeating: "200 HTTP/2.0 \(connection)", count: 8))
        #expect(calls == 1)
        #expect(recorded.allSatisfy { $0.header("authorization")?.hasPrefix("Bearer mock-access-") == true })
    }

    /// `off` speaks HTTP/1.1 to nginx over TLS, ALPN or not.
    @Test func offSpeaksHTTP11() throws {
        let setup = try Setup(tls: true, "upstream_http2 = off")
        let answers = try setup.get(2)
        setup.stop()
        #expect(
            answers.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == [
                "200 HTTP/1.1", "200 HTTP/1.1",
            ]
        )
    }
}
