import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerProxy

/// `max_header_bytes` over a socket: a head larger than the limit is answered 431 as soon as more than
/// the limit is buffered, whatever its line structure and however its bytes arrive, on both I/O
/// backends. (A head whose current line had no line end within the limit used to wait out
/// `client_header_timeout` and get 408: reading paused at 64 KiB buffered, one byte short of a verdict.)
@Suite struct HeadLimitTests {
    /// Oversized heads whose bytes past the limit hold no line end, or only lines within it.
    enum Shape: String, CaseIterable, CustomTestStringConvertible {
        case longTarget, manyFields, longFieldLine

        var testDescription: String { self.rawValue }

        var bytes: [UInt8] {
            switch self {
            case .longTarget:
                Array("GET /\(String(repeating: "a", count: 100_000)) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
            case .manyFields:
                Array(
                    ("GET / HTTP/1.1\r\nHost: localhost\r\n" + (0..<10_000).map { "X-Field-\($0): v\r\n" }.joined()
                        + "\r\n").utf8
                )
            case .longFieldLine:
                Array(
                    ("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + String(repeating: "b", count: 1 << 20)
                        + "\r\n\r\n").utf8
                )
            }
        }
    }

    /// How the client writes: everything in one `send`, or in pieces it lets the proxy read one by
    /// one (4 KiB pieces add up to exactly 64 KiB, the read-ahead at which reading used to pause; 1000
    /// byte pieces cross it mid-piece).
    enum Delivery: CaseIterable, CustomTestStringConvertible {
        case atOnce, pieces4KiB, pieces1000

        var testDescription: String {
            switch self {
            case .atOnce: "at once"
            case .pieces4KiB: "in 4 KiB pieces"
            case .pieces1000: "in 1000-byte pieces"
            }
        }

        var pieceSize: Int? {
            switch self {
            case .atOnce: nil
            case .pieces4KiB: 4096
            case .pieces1000: 1000
            }
        }
    }

    func fixture(_ io: IOBackend, maxHeaderBytes: Int = 64 * 1024) throws -> ProxyFixture {
        let fixture = try ProxyFixture {
            $0.io = io
            $0.maxHeaderBytes = maxHeaderBytes
            // Far longer than the client waits: a 408 would show as a timeout, not pass as an answer.
            $0.clientHeaderTimeout = .seconds(60)
        }
        #expect(fixture.proxy.usesIOUring == (io == .ioUring), "the loops use the other backend")
        return fixture
    }

    @Test(arguments: IOBackend.allCases, Shape.allCases)
    func answers431AtOnce(io: IOBackend, shape: Shape) throws {
        try self.expect431(io: io, shape: shape, delivery: .atOnce)
    }

    @Test(arguments: IOBackend.allCases, Shape.allCases)
    func answers431InPiecesAddingUpTo64KiB(io: IOBackend, shape: Shape) throws {
        try self.expect431(io: io, shape: shape, delivery: .pieces4KiB)
    }

    @Test(arguments: IOBackend.allCases, Shape.allCases)
    func answers431InOddPieces(io: IOBackend, shape: Shape) throws {
        try self.expect431(io: io, shape: shape, delivery: .pieces1000)
    }

    func expect431(io: IOBackend, shape: Shape, delivery: Delivery) throws {
        let fixture = try self.fixture(io)
        let client = try BlockingHTTPClient(connectingTo: fixture.address, timeout: .seconds(10))
        Self.send(shape.bytes, to: client, in: delivery.pieceSize)
        let response = try client.readResponse()
        #expect(response.status == 431)
        #expect(response.text == "bearer-proxy: bad request: request head larger than max_header_bytes\n")
        #expect(fixture.upstream.requests.isEmpty, "nothing of an oversized head reaches the upstream")
        fixture.expectStillServing()
    }

    /// A limit above the 64 KiB the connection otherwise reads ahead: a head within it is forwarded
    /// (it used to wait for bytes the proxy no longer read, then got 408), one above it gets 431.
    @Test(arguments: IOBackend.allCases)
    func honoursALimitAboveTheReadAhead(io: IOBackend) throws {
        let fixture = try self.fixture(io, maxHeaderBytes: 256 * 1024)
        let target = "/\(String(repeating: "t", count: 150_000))"
        let within = try BlockingHTTPClient(connectingTo: fixture.address, timeout: .seconds(10))
        within.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let forwarded = try within.readResponse()
        #expect(forwarded.status == 200)
        #expect(fixture.upstream.requests.map(\.target) == [target])

        let above = try BlockingHTTPClient(connectingTo: fixture.address, timeout: .seconds(10))
        Self.send(Array("GET /\(String(repeating: "u", count: 300_000)) HTTP/1.1\r\n".utf8), to: above, in: 4096)
        #expect(try above.readResponse().status == 431)
    }

    /// Sends `bytes` whole, or piece by piece, giving the proxy a moment to read each piece on its own
    /// and stopping once it has answered (it answers before the head ends).
    static func send(_ bytes: [UInt8], to client: BlockingHTTPClient, in pieceSize: Int?) {
        guard let pieceSize else {
            client.send(bytes)
            return
        }
        var noDelay: Int32 = 1
        setsockopt(client.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + pieceSize, bytes.count)
            client.send(Array(bytes[offset..<end]))
            offset = end
            var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 2) > 0 { return }
        }
    }
}
