import BearerCore
import BearerDemo
import BearerHTTP2
import BearerTestSupport
import Testing

/// How a connection's first bytes choose its protocol, in memory and live: the HTTP/2 preface may
/// arrive in pieces, and an HTTP/1.1 request that starts like it ("P" of POST) stays HTTP/1.1, its
/// pipelined successors with it; and an HTTP/2 connection's life once chosen.
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
    func anHTTP2ConnectionWithNoStreamEndsAfterClientIdleTimeout(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in
            configuration.clientIdleTimeout = .milliseconds(300)
        }
        let client = try world.connect()
        client.send(Self.opening(settings: [], get: "/a", in: world))
        var frame = client.readHTTP2Frame()
        while let seen = frame, !(seen.type == 0 && seen.flags & 1 == 1) { frame = client.readHTTP2Frame() }
        #expect(frame?.streamID == 1, "the response to stream 1 did not end")
        #expect(world.upstreamTargets == ["/a"])
        if backend == .memory { #expect(!client.closedByProxy(), "closed before its idle timeout") }
        world.advance(by: .milliseconds(400))
        let goAway = client.readHTTP2Frame()
        #expect(goAway?.type == 7, "not GOAWAY: \(String(describing: goAway))")
        #expect(goAway?.payload.prefix(8) == [0, 0, 0, 1, 0, 0, 0, 0], "not (last stream 1, NO_ERROR)")
        #expect(client.closedByProxy())
    }

    /// A client that gives its stream no window (SETTINGS_INITIAL_WINDOW_SIZE 0) and never opens it:
    /// the proxy stops reading the upstream's 64 MiB at its bounds (in memory no kernel buffer adds
    /// to them), and after client_idle_timeout resets the stream (CANCEL) and closes the upstream
    /// connection.
    @Test(arguments: WorldBackend.chosen)
    func aStreamWhoseClientGivesNoWindowIsResetAfterClientIdleTimeout(backend: WorldBackend) throws {
        let world = try TestWorld(backend) { configuration, _ in
            configuration.clientIdleTimeout = .milliseconds(300)
        }
        let client = try world.connect()
        client.send(Self.opening(settings: [HTTP2Setting(.initialWindowSize, 0)], get: "/bytes/67108864", in: world))
        var frame = client.readHTTP2Frame()
        while let seen = frame, seen.type != 1 { frame = client.readHTTP2Frame() }
        #expect(frame?.streamID == 1, "no response head on stream 1")
        if backend == .memory {
            world.settle()
            #expect(world.upstream.server.openConnections == 1, "the upstream let go before the timeout")
        }
        world.advance(by: .milliseconds(400)) { world.upstream.server.openConnections == 0 }
        frame = client.readHTTP2Frame()
        while let seen = frame, seen.type != 3 { frame = client.readHTTP2Frame() }
        #expect(
            frame?.streamID == 1 && frame?.payload == [0, 0, 0, 8],
            "not RST_STREAM CANCEL: \(String(describing: frame))"
        )
        #expect(world.upstream.server.openConnections == 0)
        let streamed = world.upstream.server.streamedBodyBytes.load(ordering: .relaxed)
        if backend == .memory { #expect(streamed < 1 << 20, "the upstream wrote \(streamed) bytes") }
    }

    /// An upstream answer's head reaches an HTTP/2 client as an HTTP/1.1 client gets it: no
    /// hop-by-hop field (nor one the upstream's `Connection` names), the length the body goes out
    /// with when there is one, and `via`; the body whole, whatever its upstream framing, and whether
    /// the client's frames come at once or in pieces.
    @Test(arguments: WorldBackend.chosen, [false, true])
    func anUpstreamHeadReachesAnHTTP2ClientAsAnHTTP1ClientGetsIt(backend: WorldBackend, inPieces: Bool) throws {
        let world = try TestWorld(backend)
        let cases: [(path: String, length: String?, body: [UInt8])] = [
            ("/hop", "4", Array("hop\n".utf8)),
            ("/bytes/5", "5", (0..<5).map(mockPatternByte)),
            ("/chunked/5", nil, (0..<5).map(mockPatternByte)),
            ("/close/5", nil, (0..<5).map(mockPatternByte)),
            ("/chunked/40000", nil, (0..<40000).map(mockPatternByte)),
        ]
        for expected in cases {
            let client = try world.connect()
            let opening = Self.opening(settings: [], get: expected.path, in: world)
            if inPieces {
                for start in stride(from: 0, to: opening.count, by: 7) {
                    client.send(Array(opening[start..<min(start + 7, opening.count)]))
                    world.settle()
                }
            } else {
                client.send(opening)
            }
            var decoder = HPACKDecoder(maxHeaderListSize: 65_536)
            var fields: [(String, String)] = []
            var body: [UInt8] = []
            var ended = false
            while !ended, let frame = client.readHTTP2Frame() {
                guard frame.streamID == 1 else { continue }
                if frame.type == 1 { fields += try decoder.decode(frame.payload).strings }
                if frame.type == 0 { body += frame.payload }
                ended = frame.flags & 1 == 1 && (frame.type == 0 || frame.type == 1)
            }
            #expect(ended, "\(expected.path): the stream did not end")
            let names = fields.map(\.0)
            #expect(fields.first { $0.0 == ":status" }?.1 == "200", "\(expected.path): \(fields)")
            #expect(fields.first { $0.0 == "content-length" }?.1 == expected.length, "\(expected.path): \(fields)")
            #expect(fields.filter { $0.0 == "via" }.map(\.1) == ["1.1 bearer-proxy"], "\(expected.path): \(fields)")
            for hopByHop in ["connection", "keep-alive", "x-hop", "transfer-encoding"] {
                #expect(!names.contains(hopByHop), "\(expected.path): \(hopByHop) reached the client: \(fields)")
            }
            if expected.path == "/hop" { #expect(fields.contains { $0 == ("x-end", "kept") }, "\(fields)") }
            #expect(body == expected.body, "\(expected.path): \(body.count) bytes")
        }
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

extension WorldProtocolScenarios {
    /// The preface, SETTINGS with `settings`, and stream 1's `GET path` naming the proxy.
    static func opening(settings: [HTTP2Setting], get path: String, in world: TestWorld) -> [UInt8] {
        var block: [UInt8] = []
        var encoder = HPACKEncoder()
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", path), (":authority", world.proxyHost)]
        encoder.encode(HeaderList(fields), into: &block)
        var frames = ByteBuffer()
        HTTP2FrameSerializer.write(.settings(settings), maxFrameSize: HTTP2.defaultMaxFrameSize, into: &frames)
        let headers = HTTP2Frame.headers(HTTP2HeadersFrame(streamID: 1, endStream: true, block: block))
        HTTP2FrameSerializer.write(headers, maxFrameSize: HTTP2.defaultMaxFrameSize, into: &frames)
        return HTTP2.clientPreface + frames.readableBytesArray
    }
}

extension WorldClient {
    /// Reads one HTTP/2 frame (type, flags, stream id, payload); nil when the stream ends first.
    func readHTTP2Frame() -> (type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])? {
        let header = self.read(count: HTTP2.frameHeaderSize)
        guard header.count == HTTP2.frameHeaderSize else { return nil }
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        let streamID = header[5...8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff
        let payload = self.read(count: length)
        guard payload.count == length else { return nil }
        return (header[3], header[4], streamID, payload)
    }
}
