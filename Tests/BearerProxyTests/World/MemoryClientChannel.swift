import BearerCore
import BearerIO
import BearerTestSupport

/// A client's stream on a memory network, read and written from the thread that runs the stepped
/// loop: a read that finds nothing buffered settles the world first, and what arrived by then is
/// what the read returns (nothing: the proxy has nothing more to say until time moves).
final class MemoryClientChannel: WorldChannel, StreamConnectionDelegate {
    private let loop: EventLoop
    private let connection: StreamConnection
    private var received: [UInt8] = []
    private(set) var peerClosed = false
    /// Why the stream closed, when it closed with an error (a refused connect, a reset).
    private(set) var closeError: IOError?

    init(to address: SocketAddress, on network: MemoryNetwork, loop: EventLoop) throws(IOError) {
        self.loop = loop
        self.connection = try network.connect(to: address, on: loop)
        self.connection.start(delegate: self)
        loop.runUntilQuiescent()
        if let closeError { throw closeError }
    }

    deinit {
        self.connection.close()
    }

    func send(_ bytes: [UInt8]) {
        guard !self.connection.isClosed else { return }
        self.connection.write(bytes)
        self.connection.flush()
    }

    func receiveSome() -> [UInt8] {
        if self.received.isEmpty, !self.peerClosed { self.loop.runUntilQuiescent() }
        defer { self.received.removeAll() }
        return self.received
    }

    func shutdownWrite() {
        self.connection.shutdownWriteAfterFlush()
    }

    /// Closes the stream with a reset instead of an end.
    func reset() {
        self.connection.setResetOnClose()
        self.connection.close()
        self.peerClosed = true
    }

    // MARK: StreamConnectionDelegate

    func streamReceived(_ connection: StreamConnection) {
        self.received += connection.inbound.readableBytesArray
        connection.inbound.clear()
    }

    func streamReadEnded(_ connection: StreamConnection) { self.peerClosed = true }
    func streamWritable(_ connection: StreamConnection) {}
    func streamConnected(_ connection: StreamConnection) {}

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.peerClosed = true
        self.closeError = error
    }
}
