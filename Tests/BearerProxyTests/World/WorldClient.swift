import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport

/// A client's end of a connection in a test world: a blocking byte stream that knows whether the
/// proxy closed it. Live it is a socket (`BlockingHTTPClient`), in memory a `MemoryClientChannel`.
protocol WorldChannel: BlockingByteChannel {
    /// Whether a read met the end of the stream (an empty read may also be a timeout, live).
    var peerClosed: Bool { get }
}

extension BlockingHTTPClient: WorldChannel {}

/// A client connection to the proxy of a `TestWorld`: raw bytes out, responses parsed in. Every
/// read is bounded: live by the socket's receive timeout, in memory by the world settling (a read
/// that would block runs the world until nothing is pending, and what came by then is all there is).
final class WorldClient {
    typealias Response = BlockingHTTPClient.Response
    typealias ClientError = BlockingHTTPClient.ClientError

    let channel: any WorldChannel
    private var reader = HTTPResponseReader()
    /// Keeps the world running while a client of it is in use: a scenario's last look at the world
    /// may come before its last read, and the world's end would close the connection under it.
    private let world: TestWorld

    init(_ channel: any WorldChannel, in world: TestWorld) {
        self.channel = channel
        self.world = world
    }

    func send(_ text: String) { self.channel.send(Array(text.utf8)) }
    func send(_ bytes: [UInt8]) { self.channel.send(bytes) }
    func shutdownWrite() { self.channel.shutdownWrite() }

    /// Appends what one read returns to `pending`; false at the end of the stream (or, live, the
    /// timeout).
    private func fill(_ pending: inout ByteBuffer) -> Bool {
        let bytes = self.channel.receiveSome()
        guard !bytes.isEmpty else { return false }
        pending.writeBytes(bytes)
        return true
    }

    /// Reads one whole response (after any 1xx heads, whose statuses it lists) to a `method` request.
    func readResponse(method: HTTPMethod = .get) throws(ClientError) -> Response {
        try self.reader.readResponse(method: method, fill: self.fill)
    }

    /// Reads the next response head, 1xx included (a `100 Continue`, a `101`), leaving what follows
    /// it buffered (`readSome` returns it first).
    func readHead() throws(ClientError) -> ResponseHead {
        try self.reader.readHead(fill: self.fill)
    }

    /// What is buffered, or else what one read returns; empty at the end of the stream.
    func readSome() -> [UInt8] {
        if self.reader.pending.readableBytes == 0, !self.fill(&self.reader.pending) { return [] }
        return self.reader.takeBuffered()
    }

    /// The bytes read but not parsed yet (after a 101 or a CONNECT's 200: the first of what follows).
    func takeBuffered() -> [UInt8] { self.reader.takeBuffered() }

    /// Reads one WebSocket frame (after the 101 head).
    func readFrame() -> WebSocketFrames.Frame? {
        while true {
            if let (frame, used) = WebSocketFrames.decode(self.reader.pending.readableBytesArray[...]) {
                self.reader.pending.moveReaderIndex(forwardBy: used)
                return frame
            }
            guard self.fill(&self.reader.pending) else { return nil }
        }
    }

    /// Reads `count` bytes (fewer when the stream ends first).
    func read(count: Int) -> [UInt8] {
        while self.reader.pending.readableBytes < count, self.fill(&self.reader.pending) {}
        let bytes = Array(self.reader.pending.readableBytesArray.prefix(count))
        self.reader.pending.moveReaderIndex(forwardBy: bytes.count)
        return bytes
    }

    /// Whether the proxy closes the connection (within the read's bound), discarding what it sends.
    func closedByProxy() -> Bool {
        while self.fill(&self.reader.pending) { self.reader.pending.clear() }
        return self.channel.peerClosed
    }
}
