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

        init(_ listener: NginxServer.Listener, _ setting: String) throws {
            self.tokenServer = MockTokenServer(group: e2eMockGroup, authority: self.authority)
            try self.tokenServer.start()
            self.backend = MockUpstream(group: e2eMockGroup, authority: self.authority)
            try self.backend.start()
            self.nginx = try NginxServer(
                backendPort: self.backend.server.port,
                listener: listener,
                in: temporaryDirectory()
            )
            let tls = listener == .tls
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
    @Test(arguments: [(NginxServer.Listener.tls, "upstream_http2 = auto"), (.h2c, "upstream_http2 = on")])
    func aRevocationCostsOneTokenCallOverHTTP2(listener: NginxServer.Listener, setting: String) throws {
        let setup = try Setup(listener, setting)
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

    /// A client may go on sending a body after its answer came (nginx answers `/early` before reading
    /// it): that data, which no exchange takes any more, is credited back, or the stream's window
    /// (and the connection's, shared by every stream) would stay spent. python3-h2 sends the head,
    /// waits for the whole answer, then sends the stream's whole window of body and waits for a
    /// WINDOW_UPDATE; the proxy sent none, and such clients (h2load -m 2 with 70 KB bodies) hung.
    /// Both I/O backends.
    @Test(.requires(.pythonH2), arguments: ["io_uring", "epoll"])
    func bodyDataAfterTheAnswerIsCreditedBack(io: String) throws {
        let setup = try Setup(.http1, "io = \(io)")
        let client = HTTP2StreamControlTests.Client(
            """
            authority = "127.0.0.1:" + sys.argv[1]
            c.send_headers(1, [(":method", "POST"), (":path", "/early"), (":scheme", "http"), (":authority", authority)])
            send(c)
            ended = False
            while not ended:
                found = events(c)
                if found is None: sys.exit(3)
                ended = any(isinstance(e, h2.events.StreamEnded) and e.stream_id == 1 for e in found)
            print("answered", flush=True)
            window = c.local_flow_control_window(1)
            while window > 0:
                size = min(window, c.max_outbound_frame_size)
                c.send_data(1, b"a" * size)
                window -= size
            send(c)
            while (found := events(c)) is not None:
                if any(isinstance(e, h2.events.WindowUpdated) and e.stream_id == 1 for e in found):
                    print("credited", flush=True)
                    sys.exit(0)
                send(c)
            sys.exit(3)
            """,
            port: setup.port
        )
        let outcome = client.finish()
        setup.stop()
        #expect(outcome?.standardOutput == "answered\ncredited\n", "\(outcome?.standardError ?? "no outcome")")
    }

    /// `off` speaks HTTP/1.1 to nginx over TLS, ALPN or not.
    @Test func offSpeaksHTTP11() throws {
        let setup = try Setup(.tls, "upstream_http2 = off")
        let answers = try setup.get(2)
        setup.stop()
        #expect(
            answers.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == [
                "200 HTTP/1.1", "200 HTTP/1.1",
            ]
        )
    }
}
