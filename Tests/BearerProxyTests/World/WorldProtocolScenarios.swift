import BearerCore
import BearerDemo
import BearerTestSupport
import Testing

/// How a connection's first bytes choose its protocol, in memory and live: the HTTP/2 preface may
/// arrive in pieces, and an HTTP/1.1 request that starts like it ("P" of POST) stays HTTP/1.1, its
/// pipelined successors with it.
@Suite struct WorldProtocolScenarios {
    /// An empty SETTINGS frame: 9 bytes of header, type 4, no flags, stream 0.
    static let emptySettings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]

    @Test(arguments: WorldBackend.chosen)
    func aPrefaceArrivingInPiecesIsServedAsHTTP2(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        client.send(Array(preface.prefix(5)))
        world.settle()
        client.send(Array(preface[5..<16]))
        world.settle()
        client.send(Array(preface.dropFirst(16)) + Self.emptySettings)
        let header = client.read(count: 9)
        #expect(header.count == 9, "the proxy sent \(header.count) bytes instead of a frame header")
        #expect(header.count == 9 && header[3] == 4 && header[5...8].allSatisfy { $0 == 0 }, "not SETTINGS: \(header)")
        #expect(world.upstream.requests.isEmpty)
    }

    @Test(arguments: WorldBackend.chosen)
    func pipelinedHTTP1StartingLikeThePrefaceStaysHTTP1(backend: WorldBackend) throws {
        let world = try TestWorld(backend)
        let client = try world.connect()
        client.send("P")
        world.settle()
        client.send(
            "OST /a HTTP/1.1\r\nHost: \(world.proxyHost)\r\nContent-Length: 2\r\n\r\nhi"
                + "GET /b HTTP/1.1\r\nHost: \(world.proxyHost)\r\n\r\n"
        )
        #expect(try client.readResponse(method: .post).status == 200)
        #expect(try client.readResponse().status == 200)
        #expect(world.upstreamTargets == ["/a", "/b"])
        #expect(world.upstream.requests.first?.method == "POST")
    }
}
