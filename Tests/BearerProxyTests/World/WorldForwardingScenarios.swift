import BearerCore
import BearerDemo
import BearerTestSupport
import Testing

@testable import BearerConfig

/// Requests through the proxy, in memory and live: where the token goes and where it does not, and
/// how bytes are framed and connections reused on the way.
@Suite struct WorldForwardingScenarios {
    @Test(arguments: WorldBackend.chosen)
    func anOriginFormRequestCarriesTheSessionsToken(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let response = try world.get("/v1/items?page=2", headers: "X-Custom: kept\r\n")
        #expect(response.status == 200)
        #expect(world.upstreamTargets == ["/v1/items?page=2"])
        #expect(world.upstreamTokens == ["mock-access-1"])
        #expect(world.upstream.requests.first?.header("x-custom") == "kept")
        #expect(world.tokenServer.callCount == 1)
    }

    @Test(arguments: WorldBackend.chosen)
    func anAbsoluteFormRequestToTheUpstreamCarriesTheToken(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let authority = world.upstreamAuthority
        let response = try world.send(
            "GET http://\(authority)/absolute HTTP/1.1\r\nHost: \(authority)\r\nProxy-Connection: keep-alive\r\n\r\n"
        )
        #expect(response.status == 200)
        #expect(world.upstreamTargets == ["/absolute"])
        #expect(world.upstreamTokens == ["mock-access-1"])
        #expect(world.upstream.requests.first?.header("proxy-connection") == nil)
    }

    @Test(arguments: WorldBackend.chosen)
    func anotherHostGetsNoTokenAndKeepsTheClientsOwnCredentials(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let (other, authority) = try world.startOtherUpstream()
        let plain = try world.send("GET http://\(authority)/elsewhere HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(plain.status == 200)
        let own = try world.send(
            "GET http://\(authority)/own HTTP/1.1\r\nHost: \(authority)\r\nAuthorization: Basic dTpw\r\n\r\n"
        )
        #expect(own.status == 200)
        #expect(other.requests.map(\.target) == ["/elsewhere", "/own"])
        #expect(other.requests.map { $0.headerValues("authorization") } == [[], ["Basic dTpw"]])
        #expect(world.upstream.requests.isEmpty)
    }

    @Test(arguments: WorldBackend.chosen)
    func pipelinedRequestsAreAnsweredInOrder(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        var pipeline = ""
        for index in 0..<4 { pipeline += "GET /p/\(index) HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n" }
        pipeline += "GET /bytes/100000 HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n"
        pipeline += "GET /p/last HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n"
        client.send(pipeline)
        for index in 0..<4 {
            #expect(try client.readResponse().text.contains(#""target":"\/p\/\#(index)""#))
        }
        let large = try client.readResponse()
        #expect(large.body.count == 100_000 && countMockPatternMismatches(large.body) == 0)
        #expect(try client.readResponse().text.contains("last"))
        #expect(world.upstreamTargets == ["/p/0", "/p/1", "/p/2", "/p/3", "/bytes/100000", "/p/last"])
    }

    @Test(arguments: WorldBackend.chosen)
    func keepAliveRequestsShareOnePooledUpstreamConnection(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        for index in 0..<10 {
            client.send("GET /k/\(index) HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        #expect(world.upstream.requests.count == 10)
        #expect(world.upstream.server.acceptedConnections.load(ordering: .relaxed) == 1)
    }

    @Test(arguments: WorldBackend.chosen)
    func aContentLengthBodyIsForwardedWhole(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let body = String(repeating: "b", count: 300_000)
        let response = try world.send(
            "PUT /echo HTTP/1.1\r\nHost: \(world.proxyHost)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        #expect(response.body.count == 300_000)
        #expect(world.upstream.requests.first?.header("content-length") == "300000")
    }

    @Test(arguments: WorldBackend.chosen)
    func aChunkedBodyIsForwardedWithItsFraming(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        client.send("POST /echo HTTP/1.1\r\nHost: \(world.proxyHost)\r\nTransfer-Encoding: chunked\r\n\r\n")
        client.send("5\r\nhello\r\n")
        client.send("6\r\n world\r\n0\r\n\r\n")
        #expect(try client.readResponse().text == "hello world")
        #expect(world.upstream.requests.first?.header("transfer-encoding") == "chunked")
        #expect(world.upstream.requests.first?.body == Array("hello world".utf8))
    }

    @Test(arguments: WorldBackend.chosen)
    func anExpect100ContinueUploadGetsItsContinueThenItsAnswer(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        client.send(
            "POST /echo HTTP/1.1\r\nHost: \(world.proxyHost)\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        )
        #expect(try client.readHead().status == 100)
        client.send("12345")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "12345")
        #expect(world.upstreamTokens == ["mock-access-1"])
    }

    @Test(arguments: WorldBackend.chosen)
    func anUpstreamResetIsA502AndTheProxyGoesOnServing(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        #expect(try world.get("/reset").status == 502)
        #expect(try world.get("/after").status == 200)
    }

    @Test(arguments: WorldBackend.chosen)
    func aChunkedResponseIsRechunkedWhole(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let response = try world.get("/chunked/70000")
        #expect(response.header("transfer-encoding") == "chunked")
        #expect(response.body.count == 70000 && countMockPatternMismatches(response.body) == 0)
    }

    @Test(arguments: WorldBackend.chosen)
    func anOversizedRequestHeadIs431AndTheProxyGoesOnServing(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in configuration.maxHeaderBytes = 4096 }
        let big = String(repeating: "x", count: 8000)
        let response = try world.send("GET / HTTP/1.1\r\nHost: \(world.proxyHost)\r\nX-Big: \(big)\r\n\r\n")
        #expect(response.status == 431)
        #expect(response.text.contains("max_header_bytes"))
        #expect(world.upstream.requests.isEmpty)
        #expect(try world.get("/after").status == 200)
    }

    @Test(arguments: WorldBackend.chosen)
    func otherHostsDenyRefusesAHostWithoutAToken(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in configuration.otherHosts = .deny }
        let (other, authority) = try world.startOtherUpstream()
        let response = try world.send("GET http://\(authority)/x HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        #expect(response.status == 403)
        #expect(response.text.contains("other_hosts = deny"))
        #expect(other.requests.isEmpty)
        #expect(try world.get("/after").status == 200)
    }
}
