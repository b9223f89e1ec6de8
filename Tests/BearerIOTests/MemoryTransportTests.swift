import BearerCore
import BearerTestSupport
import Glibc
import Testing

@testable import BearerIO

/// One end of a stream as its owner sees it: what arrived, what happened, in order.
final class StreamRecorder: StreamConnectionDelegate {
    var received: [UInt8] = []
    var events: [String] = []
    var closeError: IOError?
    /// Takes what arrives (else it stays in `inbound`, as an owner that is not ready leaves it).
    var consumes = true

    var text: String { String(decoding: self.received, as: UTF8.self) }

    func streamReceived(_ connection: StreamConnection) {
        guard self.consumes else { return }
        self.received += connection.inbound.readableBytesArray
        connection.inbound.clear()
    }

    func streamReadEnded(_ connection: StreamConnection) { self.events.append("read ended") }
    func streamWritable(_ connection: StreamConnection) { self.events.append("writable") }
    func streamConnected(_ connection: StreamConnection) { self.events.append("connected") }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.events.append("closed")
        self.closeError = error
    }
}

/// A memory network on a stepped loop, a listener on it, and connections to it: all on the test's
/// thread, each step taken by `settle()`.
final class MemoryWorld {
    let clock = ManualTimeSource()
    let loop: EventLoop
    let network: MemoryNetwork
    /// The server ends, as the listener accepted them, with their recorders.
    var accepted: [(stream: StreamConnection, recorder: StreamRecorder)] = []
    /// What the server end does when it starts: plain, or TLS from the first byte.
    var serverTLS: TLSContext?

    init(bufferSize: Int = 64 * 1024) {
        self.loop = EventLoop.stepped(clock: self.clock)
        self.network = MemoryNetwork(bufferSize: bufferSize)
    }

    deinit {
        self.loop.shutdown()
    }

    /// Listens on `address` (`api.test:443` by default, a name on the network).
    @discardableResult
    func listen(on address: SocketAddress? = nil) throws -> ListeningEndpoint {
        let endpoint = try self.network.listen(on: address ?? self.network.address(of: "api.test", port: 443))
        let listener = Listener(
            endpoint: endpoint,
            loop: self.loop,
            onAccept: { stream in
                let recorder = StreamRecorder()
                if let tls = self.serverTLS { stream.useTLS(tls.makeConnection(serverName: nil, sessionKey: nil)!) }
                self.accepted.append((stream, recorder))
                stream.start(delegate: recorder)
            },
            onAcceptError: { _ in }
        )
        listener.start()
        return endpoint
    }

    /// A started client stream to `address`, with its recorder.
    func connect(
        to address: SocketAddress? = nil,
        tls: TLSConnection? = nil
    ) throws -> (stream: StreamConnection, recorder: StreamRecorder) {
        let stream = try self.network.connect(
            to: address ?? self.network.address(of: "api.test", port: 443),
            on: self.loop
        )
        if let tls { stream.useTLS(tls) }
        let recorder = StreamRecorder()
        stream.start(delegate: recorder)
        return (stream, recorder)
    }

    func settle() {
        self.loop.runUntilQuiescent()
    }
}

@Suite struct MemoryTransportTests {
    @Test func carriesBytesBothWaysOnTheLoopsNextTurn() throws {
        let world = MemoryWorld()
        try world.listen()
        let client = try world.connect()
        #expect(client.stream.isConnecting)
        world.settle()
        #expect(client.recorder.events == ["connected"])
        let server = try #require(world.accepted.first)

        client.stream.write(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        client.stream.flush()
        #expect(server.recorder.received.isEmpty, "nothing arrives before the loop turns")
        world.settle()
        #expect(server.recorder.text == "GET / HTTP/1.1\r\n\r\n")

        server.stream.write(Array("HTTP/1.1 200 OK\r\n\r\n".utf8))
        server.stream.flush()
        world.settle()
        #expect(client.recorder.text == "HTTP/1.1 200 OK\r\n\r\n")
        #expect(client.stream.bytesSent == 18)
    }

    @Test func aHalfCloseEndsOneDirectionOnly() throws {
        let world = MemoryWorld()
        try world.listen()
        let client = try world.connect()
        world.settle()
        let server = try #require(world.accepted.first)

        client.stream.write(Array("last words".utf8))
        client.stream.shutdownWriteAfterFlush()
        world.settle()
        #expect(server.recorder.text == "last words")
        #expect(server.recorder.events == ["read ended"])

        // The other direction still flows, and ends with an orderly close.
        server.stream.write(Array("answer".utf8))
        server.stream.closeAfterFlush()
        world.settle()
        #expect(client.recorder.text == "answer")
        #expect(client.recorder.events == ["connected", "read ended"])
        #expect(server.recorder.events == ["read ended", "closed"])
        #expect(server.recorder.closeError == nil)
    }

    @Test func aResetFailsThePeersStream() throws {
        let world = MemoryWorld()
        try world.listen()
        let client = try world.connect()
        world.settle()
        let server = try #require(world.accepted.first)

        server.stream.setResetOnClose()
        server.stream.close()
        world.settle()
        #expect(client.recorder.events == ["connected", "closed"])
        #expect(client.recorder.closeError?.errnoCode == ECONNRESET)
    }

    @Test func aConnectNobodyListensForIsRefused() throws {
        let world = MemoryWorld()
        let client = try world.connect(to: world.network.address(of: "nobody.test", port: 80))
        world.settle()
        #expect(client.recorder.events == ["closed"])
        #expect(client.recorder.closeError?.errnoCode == ECONNREFUSED)
        #expect(client.recorder.closeError?.function == "connect")
    }

    @Test func aFullBufferHoldsTheWriterBackUntilTheReaderReads() throws {
        let world = MemoryWorld(bufferSize: 1000)
        try world.listen()
        let client = try world.connect()
        world.settle()
        let server = try #require(world.accepted.first)
        server.stream.setReading(false)

        let payload = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        client.stream.write(payload)
        client.stream.flush()
        world.settle()
        #expect(client.stream.pendingWriteBytes == 4000, "the peer's buffer took 1000 bytes")
        #expect(server.recorder.received.isEmpty)
        #expect(!client.recorder.events.contains("writable"))

        server.stream.setReading(true)
        world.settle()
        #expect(server.recorder.received == payload)
        #expect(client.stream.pendingWriteBytes == 0)
        #expect(client.recorder.events.last == "writable", "the writer hears that everything went")
    }

    @Test func listensOnAPortOfItsOwnForPortZeroAndRefusesATakenAddress() throws {
        let world = MemoryWorld()
        let first = try world.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        let second = try world.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        #expect(first.address.port != 0 && second.address.port != 0 && first.address != second.address)
        #expect(throws: IOError.self) { try world.listen(on: first.address) }

        first.close()
        let client = try world.connect(to: first.address)
        world.settle()
        #expect(client.recorder.closeError?.errnoCode == ECONNREFUSED, "a closed endpoint refuses")
    }

    @Test func namesResolveToAddressesOfTheirOwn() {
        let network = MemoryNetwork()
        let api = network.address(of: "api.test", port: 443)
        #expect(network.address(of: "api.test", port: 443) == api)
        #expect(network.address(of: "auth.test", port: 443) != api)
        #expect(network.address(of: "localhost", port: 8080) == SocketAddress(ipAddress: "127.0.0.1", port: 8080))
        guard case .addresses(let addresses) = network.lookUp(host: "api.test", port: 443) else {
            Issue.record("a name on the network resolves")
            return
        }
        #expect(addresses == [api])
    }

    @Test func runsATLSSessionOverMemory() throws {
        let world = MemoryWorld()
        world.serverTLS = try TLSFixtures.server()
        try world.listen()
        let context = try TLSContext.client(caFile: TLSFixtures.caFile, verify: true)
        let client = try world.connect(tls: context.makeConnection(serverName: "localhost", sessionKey: nil)!)
        world.settle()
        #expect(client.recorder.events == ["connected"], "\(String(describing: client.recorder.closeError))")
        #expect(client.stream.tls?.negotiatedProtocol == "http/1.1")
        let server = try #require(world.accepted.first)
        #expect(server.recorder.events == ["connected"])

        // More than a record and more than the pipe holds at once, both ways.
        let payload = Array(String(repeating: "ping-", count: 40_000).utf8)
        client.stream.write(payload)
        client.stream.flush()
        world.settle()
        #expect(server.recorder.received == payload)
        server.stream.write(server.recorder.received)
        server.stream.flush()
        world.settle()
        #expect(client.recorder.received == payload)

        // A half-close is a close_notify, then the end: the server reads the end, after the data.
        client.stream.shutdownWriteAfterFlush()
        world.settle()
        #expect(server.recorder.events.last == "read ended")
        #expect(client.stream.bytesSent > payload.count, "what went is ciphertext")
    }

    @Test func aTLSServerThatIsNotTrustedFailsTheHandshakeInWords() throws {
        let world = MemoryWorld()
        world.serverTLS = try TLSFixtures.server()
        try world.listen()
        // The system's trust store only: the fixtures' CA is unknown to it.
        let context = try TLSContext.client(caFile: nil, verify: true)
        let client = try world.connect(tls: context.makeConnection(serverName: "localhost", sessionKey: nil)!)
        world.settle()
        #expect(client.recorder.events == ["closed"])
        #expect(client.recorder.closeError?.tlsFailure != nil)
        #expect(client.recorder.closeError?.reason.contains("certificate not trusted") == true)
    }
}

@Suite struct SteppedLoopTests {
    @Test func advancingFiresTimersAtTheirDeadlinesInOrder() {
        let clock = ManualTimeSource()
        let loop = EventLoop.stepped(clock: clock)
        defer { loop.shutdown() }
        let start = clock.now()
        var fired: [String] = []
        loop.schedule(at: start + .seconds(30)) { fired.append("late at \((clock.now() - start).components.seconds)") }
        loop.schedule(at: start + .seconds(10)) {
            fired.append("early at \((clock.now() - start).components.seconds)")
            // A timer set by a timer, due within the same advance, fires in it too.
            loop.schedule(after: .seconds(5)) { fired.append("chained at \((clock.now() - start).components.seconds)") }
        }
        loop.advance(by: .seconds(9))
        #expect(fired.isEmpty)
        loop.advance(by: .seconds(12))
        #expect(fired == ["early at 10", "chained at 15"])
        loop.advance(by: .seconds(60))
        #expect(fired == ["early at 10", "chained at 15", "late at 30"])
        #expect(clock.now() - start == .seconds(81))
    }

    @Test func runsTasksAndDeferredWorkThenASettlingPoolsTasksOneAtATime() {
        let loop = EventLoop.stepped()
        defer { loop.shutdown() }
        let pool = BlockingWorkPool(settlingOn: loop)
        let order = Locked<[String]>([])
        pool.execute {
            order.withLock { $0.append("blocking 1") }
            // Its answer comes back to the loop, which runs it before the next blocking task.
            loop.execute { order.withLock { $0.append("answer 1") } }
        }
        pool.execute { order.withLock { $0.append("blocking 2") } }
        loop.execute {
            order.withLock { $0.append("task") }
            loop.defer { order.withLock { $0.append("deferred") } }
        }
        #expect(order.withLock { $0 }.isEmpty, "nothing runs before the test runs the loop")
        loop.runUntilQuiescent()
        #expect(order.withLock { $0 } == ["task", "deferred", "blocking 1", "answer 1", "blocking 2"])
    }

    @Test func executeAndWaitRunsAtOnceOnTheLoopsOwnThread() {
        let loop = EventLoop.stepped()
        defer { loop.shutdown() }
        #expect(loop.inEventLoop)
        let ran = Locked(false)
        loop.executeAndWait { ran.withLock { $0 = true } }
        #expect(ran.withLock { $0 })
    }

    @Test func aStoppingLoopClosesWhatIsStillOpen() throws {
        let world = MemoryWorld()
        try world.listen()
        let client = try world.connect()
        world.settle()
        world.loop.shutdown()
        #expect(client.stream.isClosed)
        #expect(world.accepted.allSatisfy { $0.stream.isClosed })
    }
}
