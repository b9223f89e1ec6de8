import BearerCore
import BearerTestSupport
import Glibc
import Synchronization
import Testing

@testable import BearerIO

@Suite struct EventLoopTests {
    @Test func runsTasksFromOtherThreadsInOrder() {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let seen = Locked<[Int]>([])
        let loop = group.loops[0]
        for value in 0..<1000 {
            loop.execute {
                #expect(loop.inEventLoop)
                seen.withLock { $0.append(value) }
            }
        }
        #expect(waitUntil { seen.withLock { $0.count } == 1000 })
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(!loop.inEventLoop)
    }

    @Test func firesTimersInDeadlineOrderAndSkipsCancelledOnes() {
        let clock = ManualTimeSource()
        let group = EventLoopGroup(count: 1, clock: clock)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let fired = Locked<[String]>([])
        let start = clock.now()
        loop.execute {
            loop.schedule(at: start + .seconds(30)) { fired.withLock { $0.append("late") } }
            loop.schedule(at: start + .seconds(10)) { fired.withLock { $0.append("early") } }
            let cancelled = loop.schedule(at: start + .seconds(20)) { fired.withLock { $0.append("cancelled") } }
            loop.cancel(cancelled)
        }
        /// Moves the clock and waits for one loop turn: a task queued now runs after that turn's timers.
        func advance(by duration: Duration) {
            clock.advance(by: duration)
            let turned = Atomic<Bool>(false)
            loop.execute { turned.store(true, ordering: .releasing) }
            #expect(waitUntil { turned.load(ordering: .acquiring) })
        }
        advance(by: .seconds(9))
        #expect(fired.withLock { $0 }.isEmpty)
        advance(by: .seconds(12))
        #expect(fired.withLock { $0 } == ["early"])
        advance(by: .seconds(10))
        #expect(fired.withLock { $0 } == ["early", "late"])
    }
}

/// Echoes every byte back and counts what it saw; closes when the peer half-closes.
final class EchoDelegate: StreamConnectionDelegate, @unchecked Sendable {
    let closedCount = Atomic<Int>(0)

    func streamReceived(_ connection: StreamConnection) {
        let bytes = connection.inbound.readableBytesArray
        connection.inbound.clear()
        bytes.withUnsafeBytes { connection.writeAndFlush($0) }
    }

    func streamReadEnded(_ connection: StreamConnection) {
        connection.closeAfterFlush()
    }

    func streamWritable(_ connection: StreamConnection) {}
    func streamConnected(_ connection: StreamConnection) {}
    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.closedCount.add(1, ordering: .relaxed)
    }
}

/// A blocking client socket with a receive timeout, for driving servers from a test thread.
struct BlockingSocket {
    let fd: Int32

    init(connectingTo address: SocketAddress) throws {
        self.fd = socket(address.family, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(self.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = address.withSockAddr { Glibc.connect(self.fd, $0, $1) }
        if result != 0 { throw IOError(errnoCode: errno, function: "connect") }
    }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Reads until `count` bytes or end of stream or timeout.
    func receive(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while received.count < count {
            let n = chunk.withUnsafeMutableBytes {
                Glibc.read(self.fd, $0.baseAddress, min($0.count, count - received.count))
            }
            if n <= 0 { break }
            received += chunk[0..<n]
        }
        return received
    }

    func shutdownWrite() { Glibc.shutdown(self.fd, Int32(SHUT_WR)) }
    func close() { Glibc.close(self.fd) }
}

@Suite struct StreamConnectionTests {
    func startEchoServer(
        on address: SocketAddress,
        group: EventLoopGroup,
        delegate: EchoDelegate
    ) throws -> ListeningEndpoint {
        let endpoint = try SocketNetwork().listen(on: address)
        for loop in group.loops {
            loop.execute {
                let listener = Listener(
                    endpoint: endpoint,
                    loop: loop,
                    onAccept: { connection in connection.start(delegate: delegate) },
                    onAcceptError: { _ in }
                )
                listener.start()
                // Listener lifetime: kept by the loop's registration table.
            }
        }
        return endpoint
    }

    @Test(arguments: IOBackend.allCases)
    func echoesOverTCPIncludingALargeTransfer(io: IOBackend) throws {
        let group = EventLoopGroup(count: 2, io: io)
        defer { group.shutdown() }
        if io == .ioUring {
            // This machine's kernel allows io_uring: the loops must really use it.
            let usesRing = group.loops.allSatisfy { $0.usesIOUring }
            #expect(usesRing, "\(group.loops[0].ringUnavailableReason ?? "")")
        }
        let delegate = EchoDelegate()
        let endpoint = try self.startEchoServer(
            on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!,
            group: group,
            delegate: delegate
        )
        defer { endpoint.close() }
        let client = try BlockingSocket(connectingTo: endpoint.address)
        defer { client.close() }
        client.send(Array("hello".utf8))
        #expect(client.receive(count: 5) == Array("hello".utf8))

        // 4 MB both ways at once: exercises partial writes and buffering on the server.
        let payload = (0..<4_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let sender = spawnThread(name: "test-sender") { client.send(payload) }
        let echoed = client.receive(count: payload.count)
        joinThread(sender)
        #expect(echoed.count == payload.count)
        #expect(echoed == payload)

        client.shutdownWrite()
        #expect(client.receive(count: 1).isEmpty)
        #expect(waitUntil { delegate.closedCount.load(ordering: .relaxed) == 1 })
    }

    @Test func listensOnUnixSocketWithMode0600ReplacingAStaleFile() throws {
        let path = try ScratchSpace.newPath("io.sock")
        defer { unlink(path) }
        // A stale socket file: bound once, its process (here: its fd) gone.
        let stale = try Socket.listen(on: .unix(path: path))
        Socket.close(stale)

        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let delegate = EchoDelegate()
        let endpoint = try self.startEchoServer(on: .unix(path: path), group: group, delegate: delegate)
        defer { endpoint.close() }
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)

        let client = try BlockingSocket(connectingTo: .unix(path: path))
        defer { client.close() }
        client.send(Array("ping".utf8))
        #expect(client.receive(count: 4) == Array("ping".utf8))
    }

    /// Binding a unix socket leaves the process's umask alone: it is shared by every thread, and a
    /// folder made or a program started beside the bind (CI saw a test's 0700 folder come out 0600,
    /// and a browser and a build that could not use their own files) took the socket's 0177.
    @Test func bindingUnixSocketsLeavesTheUmaskOfOtherThreadsAlone() throws {
        let folder = try ScratchSpace.newPath("umask")
        guard mkdir(folder, 0o700) == 0 else { throw IOError(errnoCode: errno, function: "mkdir") }
        let binds = 400
        let done = Atomic<Bool>(false)
        let binder = spawnThread(name: "binder") {
            for index in 0..<binds {
                let path = folder + "/s\(index)"
                if let fd = try? Socket.listen(on: .unix(path: path)) { Socket.close(fd) }
                unlink(path)
            }
            done.store(true, ordering: .releasing)
        }
        var made = 0
        var wrongModes: [String] = []
        // Bounded: the binder ends after its binds; a folder is made and checked meanwhile.
        while !done.load(ordering: .acquiring) || made == 0 {
            let path = folder + "/d\(made)"
            made += 1
            guard mkdir(path, 0o700) == 0 else { continue }
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & 0o777 != 0o700 {
                wrongModes.append(String(info.st_mode & 0o777, radix: 8))
            }
            rmdir(path)
        }
        joinThread(binder)
        #expect(
            wrongModes.count == 0,
            "\(wrongModes.count) of \(made) folders made during \(binds) binds: modes \(Set(wrongModes))"
        )
    }

    @Test func refusesToReplaceALiveUnixSocket() throws {
        let path = try ScratchSpace.newPath("live.sock")
        defer { unlink(path) }
        let live = try Socket.listen(on: .unix(path: path))
        defer { Socket.close(live) }
        #expect(throws: IOError.self) { try Socket.listen(on: .unix(path: path)) }
    }

    @Test func reportsConnectionRefused() throws {
        // Find a port nobody listens on: bind, read the port, close.
        let probe = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        let address = Socket.localAddress(probe)!
        Socket.close(probe)
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        final class Recorder: StreamConnectionDelegate, @unchecked Sendable {
            let outcome = Locked<String?>(nil)
            func streamReceived(_ connection: StreamConnection) {}
            func streamReadEnded(_ connection: StreamConnection) {}
            func streamWritable(_ connection: StreamConnection) {}
            func streamConnected(_ connection: StreamConnection) { self.outcome.withLock { $0 = "connected" } }
            func streamClosed(_ connection: StreamConnection, error: IOError?) {
                self.outcome.withLock { $0 = error.map { "\($0.errnoCode)" } ?? "closed" }
            }
        }
        let loop = group.loops[0]
        let recorder = Recorder()
        loop.execute {
            do throws(IOError) {
                let (fd, _) = try Socket.connect(to: address)
                StreamConnection(fd: fd, loop: loop, isConnecting: true).start(delegate: recorder)
            } catch {
                recorder.outcome.withLock { $0 = "\(error.errnoCode)" }
            }
        }
        #expect(waitUntil { recorder.outcome.withLock { $0 } != nil })
        #expect(recorder.outcome.withLock { $0 } == "\(ECONNREFUSED)")
    }
}

@Suite struct AddressTests {
    @Test(arguments: [
        ("127.0.0.1:8080", ListenAddressSpec.hostPort(host: "127.0.0.1", port: 8080)),
        ("[::1]:9000", .hostPort(host: "::1", port: 9000)),
        ("localhost:0", .hostPort(host: "localhost", port: 0)),
        ("unix:/tmp/b.sock", .unix(path: "/tmp/b.sock")),
    ])
    func parsesListenAddresses(text: String, expected: ListenAddressSpec) throws {
        #expect(try ListenAddressSpec.parse(text) == expected)
        #expect(try ListenAddressSpec.parse(text).description == text)
    }

    @Test(arguments: [
        ("127.0.0.1", AddressParseError.missingPort("127.0.0.1")),
        ("127.0.0.1:http", .invalidPort("127.0.0.1:http")),
        ("127.0.0.1:70000", .invalidPort("127.0.0.1:70000")),
        ("unix:", .emptyUnixPath),
        ("::1:80", .invalidHost("::1:80")),
    ])
    func rejectsBadListenAddresses(text: String, expected: AddressParseError) {
        #expect(throws: expected) { try ListenAddressSpec.parse(text) }
    }

    @Test func formatsSocketAddresses() {
        #expect(SocketAddress(ipAddress: "127.0.0.1", port: 80)?.description == "127.0.0.1:80")
        #expect(SocketAddress(ipAddress: "::1", port: 443)?.description == "[::1]:443")
        #expect(SocketAddress(ipAddress: "example.com", port: 80) == nil)
    }
}
