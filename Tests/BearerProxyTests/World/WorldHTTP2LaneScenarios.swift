import BearerCore
import BearerHTTP2
import BearerTestSupport
import Testing

@testable import BearerProxy

/// An HTTP/2 connection's streams reuse the exchanges of the streams that ended cleanly (lanes): a
/// stream after another runs on the same exchange connection, a reset stream's exchange is not
/// reused, and nothing of one stream's request (a replay, a 401 passed through) reaches the next
/// one. In memory: the exchanges are seen as the client connections the proxy's loop holds.
@Suite struct WorldHTTP2LaneScenarios {
    @Test func aStreamAfterAnotherRunsOnTheSameExchange() throws {
        let world = try TestWorld(.memory)
        let client = try HTTP2WorldClient(world)
        #expect(client.get("/a", stream: 1) == 200)
        world.settle()
        let lanes = client.exchanges
        #expect(lanes.count == 1, "stream 1's exchange was not kept: \(lanes)")
        #expect(client.get("/b", stream: 3) == 200)
        world.settle()
        #expect(client.exchanges == lanes, "stream 3 ran on another exchange")
        #expect(world.upstreamTargets == ["/a", "/b"])
        #expect(world.proxy.runtime.openConnections.load(ordering: .relaxed) == 1, "a parked exchange counts")
    }

    @Test func aResetStreamsExchangeIsNotReused() throws {
        let world = try TestWorld(.memory)
        let client = try HTTP2WorldClient(world)
        client.send(client.headers(get: "/hang", stream: 1))
        world.settle { world.upstreamTargets == ["/hang"] }
        #expect(client.exchanges.count == 1)
        client.send(frame: .rstStream(streamID: 1, code: .cancel))
        world.settle()
        #expect(client.exchanges.isEmpty, "the reset stream's exchange was kept")
        #expect(client.get("/a", stream: 3) == 200)
        world.settle()
        // (A new exchange may have the reset one's address, and so its identifier.)
        #expect(client.exchanges.count == 1)
    }

    @Test func aStreamAfterAReplayedOneIsSentOnceWithTheNewToken() throws {
        let world = try TestWorld(.memory)
        let client = try HTTP2WorldClient(world)
        #expect(client.get("/warm", stream: 1) == 200)
        world.authority.revokeAll()
        #expect(client.get("/replayed", stream: 3) == 200)
        let lanes = client.exchanges
        #expect(client.get("/next", stream: 5) == 200)
        world.settle()
        #expect(client.exchanges == lanes && lanes.count == 1)
        #expect(world.upstreamTargets == ["/warm", "/replayed", "/replayed", "/next"])
        #expect(world.upstreamTokens == ["mock-access-1", "mock-access-1", "mock-access-2", "mock-access-2"])
    }

    @Test func aStreamAfterA401PassedThroughIsReplayedAgain() throws {
        let world = try TestWorld(.memory)
        let client = try HTTP2WorldClient(world)
        // The upstream refuses this path whatever the token: after its one replay the 401 goes out.
        #expect(client.get("/status/401", stream: 1) == 401)
        let lanes = client.exchanges
        world.authority.revokeAll()
        let before = world.tokenServer.callCount
        #expect(client.get("/next", stream: 3) == 200, "the stream inherited the passed-through 401's replay")
        world.settle()
        #expect(client.exchanges == lanes && lanes.count == 1)
        #expect(world.upstreamTargets.suffix(2) == ["/next", "/next"])
        #expect(world.tokenServer.callCount == before + 1)
    }

    @Test func aKeptExchangeClosesAfterClientIdleTimeoutWhileItsConnectionIsBusy() throws {
        let world = try TestWorld(.memory) { configuration, _ in
            configuration.clientIdleTimeout = .milliseconds(300)
        }
        let client = try HTTP2WorldClient(world)
        client.send(client.headers(get: "/hang", stream: 1))
        world.settle { world.upstreamTargets == ["/hang"] }
        #expect(client.get("/a", stream: 3) == 200)
        world.settle()
        #expect(client.exchanges.count == 2)
        world.advance(by: .milliseconds(400))
        #expect(client.exchanges.count == 1, "the kept exchange outlived client_idle_timeout")
        #expect(world.proxy.runtime.openConnections.load(ordering: .relaxed) == 2)
        #expect(client.get("/b", stream: 5) == 200)
    }

    @Test func aDrainClosesTheKeptExchanges() throws {
        let world = try TestWorld(.memory)
        let client = try HTTP2WorldClient(world)
        #expect(client.get("/a", stream: 1) == 200)
        world.settle()
        #expect(client.exchanges.count == 1)
        #expect(world.drain(timeout: .seconds(5)) == 0)
        #expect(client.exchanges.isEmpty)
    }
}

/// A client of the proxy that speaks HTTP/2 with prior knowledge over a world's memory network,
/// one stream at a time.
private final class HTTP2WorldClient {
    let world: TestWorld
    let client: WorldClient
    private var encoder = HPACKEncoder()
    private var decoder = HPACKDecoder(maxHeaderListSize: 64 * 1024)
    /// The proxy's connection with this client (the one connection open before any stream).
    private let owner: Set<ObjectIdentifier>

    init(_ world: TestWorld) throws {
        self.world = world
        self.client = try world.connect()
        var settings = ByteBuffer()
        HTTP2FrameSerializer.write(.settings([]), maxFrameSize: HTTP2.defaultMaxFrameSize, into: &settings)
        self.client.send(HTTP2.clientPreface + settings.readableBytesArray)
        world.settle()
        self.owner = Self.clientConnections(of: world)
        precondition(self.owner.count == 1, "not one client connection: \(self.owner)")
    }

    /// The exchange connections the proxy holds for this client's streams, in flight or kept.
    var exchanges: Set<ObjectIdentifier> { Self.clientConnections(of: self.world).subtracting(self.owner) }

    private static func clientConnections(of world: TestWorld) -> Set<ObjectIdentifier> {
        Set(world.proxy.contexts.withLock { $0 }.flatMap { $0.value.clients.keys })
    }

    func send(_ bytes: [UInt8]) { self.client.send(bytes) }

    func send(frame: HTTP2Frame) {
        var bytes = ByteBuffer()
        HTTP2FrameSerializer.write(frame, maxFrameSize: HTTP2.defaultMaxFrameSize, into: &bytes)
        self.client.send(bytes.readableBytesArray)
    }

    /// The HEADERS frame of `GET path` on `stream`, naming the proxy.
    func headers(get path: String, stream: UInt32) -> [UInt8] {
        var block: [UInt8] = []
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", path), (":authority", self.world.proxyHost)]
        self.encoder.encode(HeaderList(fields), into: &block)
        var bytes = ByteBuffer()
        let headers = HTTP2Frame.headers(HTTP2HeadersFrame(streamID: stream, endStream: true, block: block))
        HTTP2FrameSerializer.write(headers, maxFrameSize: HTTP2.defaultMaxFrameSize, into: &bytes)
        return bytes.readableBytesArray
    }

    /// `GET path` on `stream`; its response's status once the stream ended (nil: it did not).
    func get(_ path: String, stream: UInt32) -> Int? {
        self.send(self.headers(get: path, stream: stream))
        var status: Int?
        while let frame = self.client.readHTTP2Frame() {
            guard frame.streamID == stream else { continue }
            if frame.type == 3 { return nil }  // RST_STREAM
            if frame.type == 1, status == nil, let list = try? self.decoder.decode(frame.payload) {
                status = list.strings.first { $0.0 == ":status" }.flatMap { Int($0.1) }
            }
            if (frame.type == 0 || frame.type == 1) && frame.flags & 1 == 1 { return status }
        }
        return nil
    }
}
