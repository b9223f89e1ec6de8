import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import COpenSSL
import Foundation
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// A proxy with tls_intercept on in front of an https mock API on `localhost` (the test certificate,
/// trusted through ca_file), its tokens from a mock token server, its local CA in a fresh folder.
/// Clients go through a real TLS client (OpenSSL over the socket) after a CONNECT.
final class InterceptFixture {
    let session: SessionFixture
    let caDirectory: String

    var upstream: MockUpstream { self.session.upstream }
    var tokenServer: MockTokenServer { self.session.tokenServer }
    var authority: MockTokenAuthority { self.session.authority }
    var logs: LogSink { self.session.logs }
    var proxy: ProxyServer { self.session.proxy }
    /// The root clients trust.
    var caFile: String { self.caDirectory + "/ca.pem" }
    /// The CONNECT target naming the API.
    var upstreamAuthority: String { "localhost:\(self.upstream.port)" }

    init(
        io: IOBackend = .ioUring,
        _ configure: @escaping (inout Configuration) -> Void = { _ in }
    ) throws {
        let directory = try ScratchSpace.newPath("intercept")
        self.caDirectory = directory
        self.session = try SessionFixture(upstreamTLS: try TLSFixtures.server()) { config, _ in
            let port = config.upstream!.port
            config.upstream = try? HTTPURL.parse("https://localhost:\(port)").get()
            config.caFile = TLSFixtures.caFile
            config.intercept.isEnabled = true
            config.intercept.caDirectory = directory
            config.io = io
            config.adminListen = .hostPort(host: "127.0.0.1", port: 0)
            configure(&config)
        }
        #expect(self.proxy.usesIOUring == (io == .ioUring))
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.caDirectory)
    }

    /// A connection through the proxy: CONNECT `authority`, then TLS as `serverName`, trusting `caFile`.
    func tunnel(
        to authority: String? = nil,
        serverName: String = "localhost",
        trusting caFile: String?? = .none,
        resuming session: OpaquePointer? = nil
    ) throws -> BlockingHTTPClient {
        let client = try self.session.client()
        let answer = try client.connect(to: authority ?? self.upstreamAuthority)
        #expect(answer.status == 200)
        try client.startTLS(serverName: serverName, caFile: caFile ?? self.caFile, resuming: session)
        return client
    }

    func get(_ path: String, on client: BlockingHTTPClient) throws -> BlockingHTTPClient.Response {
        client.send("GET \(path) HTTP/1.1\r\nHost: \(self.upstreamAuthority)\r\n\r\n")
        return try client.readResponse()
    }

    /// The value of a counter on /metrics.
    func metric(_ name: String) throws -> Int? {
        let admin = try #require(self.proxy.adminAddress)
        let text = try httpRequest(admin, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") }
    }
}

@Suite struct InterceptTunnelTests {
    @Test(arguments: IOBackend.allCases)
    func theTokenReachesAnHTTPSUpstreamThroughAnInterceptedTunnel(io: IOBackend) throws {
        let fixture = try InterceptFixture(io: io)
        #expect(fixture.session.waitForTokenCalls(1))
        let client = try fixture.tunnel()
        #expect(client.negotiatedProtocol == "http/1.1")
        let response = try fixture.get("/v1/items", on: client)
        #expect(response.status == 200)
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.header("authorization") == "Bearer mock-access-1")
        #expect(seen.header("host") == fixture.upstreamAuthority)
        #expect(seen.target == "/v1/items")
        // Keep-alive inside the tunnel: a second request on the same connection.
        #expect(try fixture.get("/v1/more", on: client).status == 200)
        #expect(try fixture.metric("bearer_proxy_intercepted_tunnels_total") == 1)
        #expect(try fixture.metric("bearer_proxy_intercept_handshake_failures_total") == 0)
        fixture.session.expectNoSecretsInLogs()
    }

    /// Clients that do not wait for the 200 send their ClientHello with the CONNECT head: read with
    /// it, it is the first of the handshake. At once, and in 7-byte pieces, each delivered to the
    /// proxy before the next is sent.
    @Test(arguments: IOBackend.allCases, [0, 7])
    func aClientHelloSentWithTheConnectHeadStartsTheHandshake(io: IOBackend, pieceSize: Int) throws {
        let fixture = try InterceptFixture(io: io)
        #expect(fixture.session.waitForTokenCalls(1))
        let connection = try fixture.session.client()
        let tls = MemoryTLSClient(socket: connection, .init(caFile: fixture.caFile))
        let authority = fixture.upstreamAuthority
        let opening = Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8) + tls.clientHello()
        if pieceSize == 0 {
            connection.send(opening)
        } else {
            for start in stride(from: 0, to: opening.count, by: pieceSize) {
                connection.send(Array(opening[start..<min(start + pieceSize, opening.count)]))
                #expect(connection.waitUntilDelivered(), "piece at \(start) of \(opening.count)")
            }
        }
        #expect(try connection.readHead().status == 200)
        tls.feed(connection.takeBuffered())
        try tls.finishHandshake()
        tls.write("GET /v1/early HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(String(decoding: tls.read(count: 12).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(fixture.upstream.requests.last?.target == "/v1/early")
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer mock-access-1")
    }

    /// The handshake presents the leaf for the CONNECT host and the intermediate that signed it.
    @Test func theHandshakeSendsLeafAndIntermediate() throws {
        let fixture = try InterceptFixture()
        let client = try fixture.tunnel()
        let subjects = client.peerCertificateSubjects
        #expect(subjects.count == 2, "leaf + intermediate, got \(subjects)")
        let intermediate = try Self.subject(ofPEM: fixture.caDirectory + "/intermediate.pem")
        #expect(subjects.last == intermediate)
        #expect(client.peerCertificateIssuer == intermediate)
    }

    static func subject(ofPEM path: String) throws -> String {
        let file = try #require(fopen(path, "r"))
        defer { fclose(file) }
        let certificate = try #require(PEM_read_X509(file, nil, nil, nil))
        defer { X509_free(certificate) }
        return subjectLine(of: certificate)
    }

    @Test(arguments: IOBackend.allCases)
    func aRevocationUnderTwentyConcurrentTunnelsCostsOneTokenCall(io: IOBackend) throws {
        let fixture = try InterceptFixture(io: io) { config in
            config.clientIdleTimeout = .seconds(600)
            config.refreshTimeout = .seconds(60)
        }
        #expect(fixture.session.waitForTokenCalls(1))
        let clients = try (0..<20).map { _ in try fixture.tunnel() }
        for client in clients { #expect(try fixture.get("/warm", on: client).status == 200) }
        #expect(fixture.tokenServer.callCount == 1)

        fixture.authority.revokeAll()
        for (index, client) in clients.enumerated() {
            client.send("GET /storm/\(index) HTTP/1.1\r\nHost: \(fixture.upstreamAuthority)\r\n\r\n")
        }
        var statuses: [Int: Int] = [:]
        for client in clients { statuses[try client.readResponse().status, default: 0] += 1 }
        #expect(statuses == [200: 20], "clients saw \(statuses)")
        #expect(fixture.tokenServer.callCount == 2, "exactly one refresh for the storm")
        #expect(try fixture.metric("bearer_proxy_intercepted_tunnels_total") == 20)
    }

    @Test(arguments: IOBackend.allCases)
    func aPostBodySurvivesTheReplayByteForByte(io: IOBackend) throws {
        let fixture = try InterceptFixture(io: io) { $0.accessToken = Secret("stale") }
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
        let client = try fixture.tunnel()
        let head = "POST /echo HTTP/1.1\r\nHost: \(fixture.upstreamAuthority)\r\nContent-Length: \(body.count)\r\n\r\n"
        client.send(Array(head.utf8) + body)
        let response = try client.readResponse(method: .post)
        #expect(response.status == 200)
        #expect(response.body == body)
        let seen = fixture.upstream.requests
        #expect(seen.map { $0.header("authorization") ?? "" } == ["Bearer stale", "Bearer mock-access-1"])
        #expect(seen.allSatisfy { $0.body == body }, "the replay carried different bytes")
        #expect(fixture.tokenServer.callCount == 1)
    }

    @Test(arguments: IOBackend.allCases)
    func pipelinedRequestsInsideATunnelAreAnsweredInOrder(io: IOBackend) throws {
        let fixture = try InterceptFixture(io: io)
        let client = try fixture.tunnel()
        var pipeline = ""
        for index in 0..<8 { pipeline += "GET /p/\(index) HTTP/1.1\r\nHost: \(fixture.upstreamAuthority)\r\n\r\n" }
        client.send(pipeline)
        for index in 0..<8 {
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text.contains("\"target\":\"\\/p\\/\(index)\""), "answer \(index): \(response.text)")
        }
        // Expect: 100-continue inside the tunnel: the upstream's 100 reaches the client at once.
        client.send(
            "PUT /echo HTTP/1.1\r\nHost: \(fixture.upstreamAuthority)\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        )
        #expect(try client.readInformational() == 100)
        client.send("hello")
        #expect(try client.readResponse(method: .put).text == "hello")
    }

    /// The client does not trust the proxy's CA: nothing is forwarded, and one line says what to do.
    @Test(arguments: IOBackend.allCases)
    func aClientThatDoesNotTrustTheCAGetsNothingForwarded(io: IOBackend) throws {
        let fixture = try InterceptFixture(io: io)
        let client = try fixture.session.client()
        #expect(try client.connect(to: fixture.upstreamAuthority).status == 200)
        #expect(throws: BlockingHTTPClient.ClientError.self) {
            try client.startTLS(serverName: "localhost", caFile: TLSFixtures.caFile)
        }
        #expect(waitUntil { (try? fixture.metric("bearer_proxy_intercept_handshake_failures_total")) == 1 })
        #expect(fixture.upstream.requests.isEmpty, "nothing may reach the upstream")
        let lines = fixture.logs.capturedLines.filter { $0.contains("intercepted tunnel") }
        #expect(lines.count == 1, "one line: \(lines)")
        let line = lines.first ?? ""
        #expect(line.contains("must trust"))
        #expect(line.contains("host=localhost"))
        #expect(line.contains(fixture.caFile))
        #expect(try fixture.metric("bearer_proxy_intercepted_tunnels_total") == 0)
    }

    /// A tunnel to a host that gets no token is a byte tunnel: the client sees that server's own
    /// certificate (here the test CA's), never one of the local CA's.
    @Test func aTunnelToANonInjectHostShowsThatServersOwnCertificate() throws {
        let other = MockHTTPServer(group: mockGroup, tls: try TLSFixtures.server()) { _ in .text(200, "other\n") }
        try other.start()
        defer { other.stop() }
        let fixture = try InterceptFixture()
        let client = try fixture.tunnel(
            to: "127.0.0.1:\(other.port)",
            serverName: "127.0.0.1",
            trusting: TLSFixtures.caFile
        )
        #expect(client.peerCertificateIssuer == "/CN=bearer-proxy test CA")
        client.send("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try client.readResponse().text == "other\n")
        let viaLocalCA = try fixture.session.client()
        #expect(try viaLocalCA.connect(to: "127.0.0.1:\(other.port)").status == 200)
        #expect(throws: BlockingHTTPClient.ClientError.self, "the local CA vouches for nothing here") {
            try viaLocalCA.startTLS(serverName: "127.0.0.1", caFile: fixture.caFile)
        }
        #expect(try fixture.metric("bearer_proxy_intercepted_tunnels_total") == 0)
    }

    @Test func otherHostsDenyStillRefusesTunnelsToOtherHosts() throws {
        let fixture = try InterceptFixture { $0.otherHosts = .deny }
        let client = try fixture.session.client()
        let answer = try client.connect(to: "example.org:443")
        #expect(answer.status == 405)
    }

    /// With tls_intercept on, a tunnel to an inject host on 443 takes TLS only.
    @Test(arguments: IOBackend.allCases)
    func clearBytesIntoAnInterceptedTunnelOn443AreClosedWithALine(io: IOBackend) throws {
        let fixture = try InterceptFixture(io: io) { $0.injectHosts = [.host("localhost")] }
        let client = try fixture.session.client()
        #expect(try client.connect(to: "localhost:443").status == 200)
        client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(client.waitForClose())
        // Logged before the connection was closed.
        #expect(
            fixture.logs.capturedLines.contains {
                $0.contains("something other than TLS") && $0.contains("localhost:443")
            }
        )
        #expect(fixture.upstream.requests.isEmpty)
    }

    /// On another port, HTTP in clear inside the tunnel is served as before tls_intercept.
    @Test func clearHTTPInsideATunnelToAnotherPortIsServedAsBefore() throws {
        let fixture = try InterceptFixture()
        let client = try fixture.session.client()
        #expect(try client.connect(to: fixture.upstreamAuthority).status == 200)
        client.send("GET /clear HTTP/1.1\r\nHost: \(fixture.upstreamAuthority)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer mock-access-1")
    }

    /// A ClientHello that never completes is closed after client_header_timeout.
    @Test func aHandshakeThatStallsIsClosedAfterTheHeaderTimeout() throws {
        let fixture = try InterceptFixture { $0.clientHeaderTimeout = .milliseconds(500) }
        let client = try fixture.session.client()
        #expect(try client.connect(to: fixture.upstreamAuthority).status == 200)
        client.send([0x16, 0x03, 0x01])
        #expect(client.waitForClose())
        // Logged before the connection was closed.
        #expect(
            fixture.logs.capturedLines.contains { $0.contains("did not complete in time") && $0.contains("localhost") }
        )
        #expect(try fixture.metric("bearer_proxy_intercept_handshake_failures_total") == 1)
    }

    @Test func aSecondTunnelResumesTheTLSSession() throws {
        let fixture = try InterceptFixture()
        let first = try fixture.tunnel()
        #expect(try fixture.get("/one", on: first).status == 200)
        let session = try #require(first.tlsSession)
        defer { SSL_SESSION_free(session) }
        let second = try fixture.tunnel(resuming: session)
        #expect(second.wasSessionReused)
        #expect(try fixture.get("/two", on: second).status == 200)
    }

    /// tls_intercept off: today's 405, its sentence naming tls_intercept.
    @Test func withTLSInterceptOffAConnectToAnInjectHostOn443Is405() throws {
        let fixture = try SessionFixture { config, _ in config.injectHosts = [.host("localhost")] }
        let client = try fixture.client()
        client.send("CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 405)
        #expect(response.text.contains("tls_intercept"))
    }

    @Test(.requires(.pythonWebSockets))
    func aWebSocketInsideATunnelReachesTheWSSUpstream() throws {
        let fixture = try InterceptFixture()
        #expect(fixture.session.waitForTokenCalls(1))
        let script = """
            import asyncio, socket, ssl, sys, websockets
            proxy_port, authority, ca = int(sys.argv[1]), sys.argv[2], sys.argv[3]
            async def main():
                sock = socket.create_connection(("127.0.0.1", proxy_port))
                sock.sendall(f"CONNECT {authority} HTTP/1.1\\r\\nHost: {authority}\\r\\n\\r\\n".encode())
                answer = b""
                while b"\\r\\n\\r\\n" not in answer:
                    answer += sock.recv(1)
                assert answer.startswith(b"HTTP/1.1 200"), answer
                context = ssl.create_default_context(cafile=ca)
                async with websockets.connect(f"wss://{authority}/live", sock=sock, ssl=context,
                                              server_hostname="localhost", open_timeout=10) as ws:
                    print(await ws.recv(), flush=True)
                    await ws.send("hello through the tunnel")
                    print(await ws.recv(), flush=True)
            asyncio.run(asyncio.wait_for(main(), 20))
            """
        let outcome = try ExternalTools.run(
            [
                ExternalTools.debianPython, "-c", script, "\(fixture.session.address.port ?? 0)",
                fixture.upstreamAuthority, fixture.caFile,
            ],
            timeout: .seconds(30)
        )
        #expect(outcome.status == 0, "python websockets failed: \(outcome.standardError)")
        #expect(outcome.standardOutput == "welcome to /live\nhello through the tunnel\n")
        let seen = try #require(fixture.upstream.requests.last)
        #expect(seen.header("authorization") == "Bearer mock-access-1")
        #expect(seen.header("upgrade") == "websocket")
    }
}
