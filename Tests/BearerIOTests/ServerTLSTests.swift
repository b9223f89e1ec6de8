import BearerCore
import BearerTestSupport
import COpenSSL
import Glibc
import Synchronization
import Testing

@testable import BearerIO

/// A plain line, then TLS on the same connection: what an intercepted CONNECT does. The server
/// reads `HELLO\n`, answers `OK\n` in clear and starts TLS with whatever already followed the line;
/// once the handshake is done it echoes, and closes (close_notify, then a FIN) when the client
/// half-closes.
final class MidStreamTLSServer: StreamConnectionDelegate, @unchecked Sendable {
    let context: TLSContext
    private let state = Locked(Observed())

    struct Observed {
        var connected = 0
        var negotiatedProtocol: String?
        var resumed = false
        var failure: IOError?
        var closed = 0
    }

    init(context: TLSContext) {
        self.context = context
    }

    var observed: Observed { self.state.withLock { $0 } }

    func streamReceived(_ connection: StreamConnection) {
        guard connection.tls == nil else {
            let bytes = connection.inbound.readableBytesArray
            connection.inbound.clear()
            bytes.withUnsafeBytes { connection.writeAndFlush($0) }
            return
        }
        let line = connection.inbound.withUnsafeReadableBytes { $0.firstIndex(of: UInt8(ascii: "\n")) }
        guard let line else { return }
        connection.inbound.moveReaderIndex(forwardBy: line + 1)
        connection.write(Array("OK\n".utf8))
        connection.startTLS(self.context.makeConnection(serverName: nil, sessionKey: nil)!)
    }

    func streamReadEnded(_ connection: StreamConnection) {
        connection.closeAfterFlush()
    }

    func streamWritable(_ connection: StreamConnection) {}

    func streamConnected(_ connection: StreamConnection) {
        self.state.withLock {
            $0.connected += 1
            $0.negotiatedProtocol = connection.tls?.negotiatedProtocol
            $0.resumed = connection.tls?.wasSessionReused ?? false
        }
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.state.withLock {
            $0.closed += 1
            $0.failure = error
        }
    }
}

/// A `MidStreamTLSServer` on its own loop, and client sockets to it.
final class MidStreamTLSHarness {
    let group: EventLoopGroup
    let server: MidStreamTLSServer
    let endpoint: ListeningEndpoint
    private var sockets: [BlockingSocket] = []

    init(_ io: IOBackend) throws {
        self.group = EventLoopGroup(count: 1, io: io)
        let loop = self.group.loops[0]
        #expect(loop.usesIOUring == (io == .ioUring), "\(loop.ringUnavailableReason ?? "")")
        let server = MidStreamTLSServer(context: try TLSFixtures.server())
        self.server = server
        let endpoint = try SocketNetwork().listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        self.endpoint = endpoint
        loop.execute {
            let listener = Listener(
                endpoint: endpoint,
                loop: loop,
                onAccept: { connection in connection.start(delegate: server) },
                onAcceptError: { _ in }
            )
            listener.start()
        }
    }

    func connect() throws -> BlockingSocket {
        let socket = try BlockingSocket(connectingTo: self.endpoint.address)
        self.sockets.append(socket)
        return socket
    }

    deinit {
        for socket in self.sockets { socket.close() }
        self.endpoint.close()
        self.group.shutdown()
    }
}

/// A client socket of a harness, holding the harness for as long as a client uses the socket: the
/// harness closes its sockets when it goes, and a socket closed under its client is worse than an
/// error. Its number goes to the next socket any thread of the process opens (the parallel tests'
/// clients and servers), so the client's writes land in another test's connection and its reads
/// take another test's bytes: a handshake that fails elsewhere, "decryption failed or bad record mac".
struct HarnessSocket: BlockingByteChannel {
    let harness: MidStreamTLSHarness
    let socket: BlockingSocket

    func send(_ bytes: [UInt8]) { self.socket.send(bytes) }
    func receiveSome() -> [UInt8] { self.socket.receiveSome() }
    func shutdownWrite() { self.socket.shutdownWrite() }
}

@Suite struct ServerTLSTests {
    /// Reads the clear `OK\n`; the TLS bytes behind it stay for the client.
    func readClearAnswer(_ socket: BlockingSocket, into client: MemoryTLSClient) throws {
        var bytes: [UInt8] = []
        while bytes.count < 3 {
            let more = socket.receiveSome()
            guard !more.isEmpty else { break }
            bytes += more
        }
        #expect(Array(bytes.prefix(3)) == Array("OK\n".utf8), "the answer before TLS goes out in clear")
        client.feed(Array(bytes.dropFirst(3)))
    }

    /// A new connection on which the line and the ClientHello went out at once (or in pieces of
    /// `pieceSize`) and the clear answer was read: the handshake can go on.
    func opened(
        _ harness: MidStreamTLSHarness,
        _ options: MemoryTLSClient.Options = .init(caFile: TLSFixtures.caFile),
        pieceSize: Int = 0
    ) throws -> MemoryTLSClient {
        let socket = try harness.connect()
        let client = MemoryTLSClient(socket: HarnessSocket(harness: harness, socket: socket), options)
        let opening = Array("HELLO\n".utf8) + client.clientHello()
        if pieceSize == 0 { socket.send(opening) } else { socket.sendInPieces(opening, size: pieceSize) }
        try self.readClearAnswer(socket, into: client)
        return client
    }

    /// What the server says went wrong, for a client that cannot complete the handshake.
    func serverFailure(_ io: IOBackend, _ options: MemoryTLSClient.Options) throws -> TLSFailure? {
        let harness = try MidStreamTLSHarness(io)
        let client = try self.opened(harness, options)
        #expect(throws: MemoryTLSClient.Failure.self) { try client.finishHandshake() }
        #expect(waitUntil { harness.server.observed.closed == 1 })
        #expect(harness.server.observed.connected == 0)
        return harness.server.observed.failure?.tlsFailure
    }

    @Test(arguments: IOBackend.allCases, [0, 5])
    func startsTLSMidStreamWithTheClientHelloAlreadyRead(io: IOBackend, pieceSize: Int) throws {
        let harness = try MidStreamTLSHarness(io)
        let server = harness.server
        // At once (the ClientHello arrives with the line, read before TLS starts), or in pieces.
        let client = try self.opened(harness, pieceSize: pieceSize)
        try client.finishHandshake()
        #expect(client.negotiatedProtocol == "http/1.1")
        #expect(client.version == "TLSv1.3")
        let payload = String(repeating: "ping-", count: 20_000)
        client.write(payload)
        #expect(client.read(count: payload.utf8.count).bytes == Array(payload.utf8))
        #expect(waitUntil { server.observed.connected == 1 })
        #expect(server.observed.negotiatedProtocol == "http/1.1")

        // The client's end: the server closes with a close_notify after everything before it.
        client.socket.shutdownWrite()
        #expect(client.read(count: 1) == ([], true), "the server's close_notify")
        #expect(waitUntil { server.observed.closed == 1 })
        #expect(server.observed.failure == nil)
    }

    /// ALPN selects http/1.1 and nothing else: a client offering only h2 gets the
    /// no_application_protocol alert (RFC 7301 §3.2), a client offering nothing is served.
    @Test(arguments: IOBackend.allCases)
    func answersOnlyHTTP11WithALPN(io: IOBackend) throws {
        for (offered, expected) in [(["h2", "http/1.1"], "http/1.1"), ([], nil)] as [([String], String?)] {
            let client = try self.opened(
                try MidStreamTLSHarness(io),
                .init(caFile: TLSFixtures.caFile, alpn: offered)
            )
            try client.finishHandshake()
            #expect(client.negotiatedProtocol == expected, "offered \(offered)")
            // The session carries data: the handshake's last flight reached this test's server.
            client.write("x")
            #expect(client.read(count: 1).bytes == Array("x".utf8), "offered \(offered)")
        }
        let harness = try MidStreamTLSHarness(io)
        let h2Only = try self.opened(harness, .init(caFile: TLSFixtures.caFile, alpn: ["h2"]))
        #expect(throws: MemoryTLSClient.Failure.self) { try h2Only.finishHandshake() }
        #expect(waitUntil { harness.server.observed.closed == 1 })
        #expect(harness.server.observed.connected == 0)
    }

    @Test(arguments: IOBackend.allCases)
    func aClientThatRefusesTheCertificateIsNamedAsSuch(io: IOBackend) throws {
        let failure = try self.serverFailure(io, .init(caFile: nil))
        guard case .certificateRefused = failure else {
            Issue.record("expected a refused certificate, got \(String(describing: failure))")
            return
        }
    }

    @Test(arguments: IOBackend.allCases)
    func refusesAClientOfferingNothingNewerThanTLS11(io: IOBackend) throws {
        #expect(
            try self.serverFailure(io, .init(caFile: TLSFixtures.caFile, maximumVersion: Int(TLS1_1_VERSION)))
                == .protocolVersion
        )
    }

    @Test(arguments: IOBackend.allCases)
    func bytesThatAreNotTLSFailTheHandshake(io: IOBackend) throws {
        let harness = try MidStreamTLSHarness(io)
        try harness.connect().send(Array("HELLO\nGET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(waitUntil { harness.server.observed.closed == 1 })
        #expect(harness.server.observed.failure?.tlsFailure == .notTLS)
    }

    @Test(arguments: IOBackend.allCases)
    func aClientClosingDuringTheHandshakeIsReported(io: IOBackend) throws {
        let harness = try MidStreamTLSHarness(io)
        let socket = try harness.connect()
        let hello = MemoryTLSClient(socket: socket, .init(caFile: TLSFixtures.caFile)).clientHello()
        socket.send(Array("HELLO\n".utf8) + hello.prefix(20))
        socket.shutdownWrite()
        #expect(waitUntil { harness.server.observed.closed == 1 })
        #expect(harness.server.observed.failure?.tlsFailure == .peerClosedDuringHandshake)
    }

    /// An error a test before left on this thread's OpenSSL queue (the tests share their threads) is
    /// not the client's: a read that only has to wait for the server's bytes waits for them.
    @Test func anErrorLeftOnTheThreadDoesNotFailTheClient() throws {
        let harness = try MidStreamTLSHarness(.epoll)
        let client = try self.opened(harness)
        try client.finishHandshake()
        client.write("x")
        // A certificate that is not PEM: PEM_R_NO_START_LINE stays on the queue.
        Array("not a certificate\n".utf8).withUnsafeBytes { text in
            let bio = BIO_new_mem_buf(text.baseAddress, Int32(text.count))
            X509_free(PEM_read_bio_X509(bio, nil, nil, nil))
            BIO_free(bio)
        }
        try #require(ERR_peek_error() != 0)
        #expect(client.read(count: 1).bytes == Array("x".utf8))
    }

    @Test(arguments: IOBackend.allCases)
    func aSecondConnectionResumesTheSession(io: IOBackend) throws {
        let harness = try MidStreamTLSHarness(io)
        let first = try self.opened(harness)
        try first.finishHandshake()
        first.write("x")
        // The echo comes after the session tickets: by then the client holds a resumable session.
        #expect(first.read(count: 1).bytes == Array("x".utf8))
        let session = try #require(first.session)
        defer { SSL_SESSION_free(session) }

        let second = try self.opened(harness, .init(caFile: TLSFixtures.caFile, session: session))
        try second.finishHandshake()
        #expect(second.wasSessionReused)
        #expect(waitUntil { harness.server.observed.connected == 2 })
        #expect(harness.server.observed.resumed)
    }
}
