import BearerCore
import BearerIO

/// A CONNECT tunnel to a host that gets no token: bytes both ways, untouched, with backpressure.
/// The client connection hands its stream's events here once the tunnel exists. Confined to its loop.
final class Tunnel: StreamConnectionDelegate {
    private unowned let client: ClientConnection
    let origin: Origin
    private var upstream: StreamConnection?
    private var remainingAddresses: [SocketAddress] = []
    private var lastError: IOError?
    private var isEstablished = false
    private var isClosed = false

    init(client: ClientConnection, origin: Origin) {
        self.client = client
        self.origin = origin
    }

    func connect(resolver: Resolver) {
        let this = UnsafeTransfer(self)
        resolver.resolve(host: self.origin.host, port: self.origin.port, on: self.client.loop) { answer in
            let tunnel = this.value
            guard !tunnel.isClosed else { return }
            switch answer {
            case .addresses(let addresses):
                tunnel.remainingAddresses = addresses
                tunnel.connectNext()
            case .failed(let reason):
                tunnel.failBeforeEstablished(.upstreamResolveFailed(origin: tunnel.origin.description, reason: reason))
            }
        }
    }

    private func connectNext() {
        guard !self.remainingAddresses.isEmpty else {
            self.failBeforeEstablished(
                .upstreamConnectFailed(origin: self.origin.description, reason: self.lastError?.reason ?? "no address")
            )
            return
        }
        let address = self.remainingAddresses.removeFirst()
        do throws(IOError) {
            let (fd, connected) = try Socket.connect(to: address)
            let stream = StreamConnection(fd: fd, loop: self.client.loop, isConnecting: !connected)
            self.upstream = stream
            stream.start(delegate: self)
            if connected { self.streamConnected(stream) }
        } catch {
            self.lastError = error
            self.connectNext()
        }
    }

    private func failBeforeEstablished(_ error: ProxyError) {
        self.isClosed = true
        self.client.tunnelFailed(error)
    }

    /// Ends both sides now.
    func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.upstream?.close()
        self.upstream = nil
        self.client.tunnelEnded()
    }

    // MARK: Client side (called by the client connection)

    func clientReceived() {
        guard let upstream = self.upstream, self.isEstablished else { return }
        let clientStream = self.client.stream
        clientStream.inbound.withUnsafeReadableBytes { upstream.write($0) }
        clientStream.inbound.clear()
        upstream.flush()
        if upstream.pendingWriteBytes > ClientConnection.highWatermark { clientStream.setReading(false) }
    }

    func clientWritable() {
        self.upstream?.setReading(true)
    }

    func clientReadEnded() {
        guard let upstream = self.upstream else { return self.close() }
        upstream.shutdownWriteAfterFlush()
    }

    // MARK: Upstream side

    func streamConnected(_ connection: StreamConnection) {
        guard !self.isEstablished else { return }
        self.isEstablished = true
        let clientStream = self.client.stream
        clientStream.withOutbound { $0.writeStaticString("HTTP/1.1 200 Connection established\r\n\r\n") }
        clientStream.flush()
        clientStream.setReading(true)
        // Bytes the client sent right after its CONNECT head (a TLS ClientHello) go first.
        if !clientStream.inbound.isEmpty { self.clientReceived() }
    }

    func streamReceived(_ connection: StreamConnection) {
        let clientStream = self.client.stream
        connection.inbound.withUnsafeReadableBytes { clientStream.write($0) }
        connection.inbound.clear()
        clientStream.flush()
        if clientStream.pendingWriteBytes > ClientConnection.highWatermark { connection.setReading(false) }
    }

    func streamWritable(_ connection: StreamConnection) {
        self.client.stream.setReading(true)
    }

    func streamReadEnded(_ connection: StreamConnection) {
        self.client.stream.shutdownWriteAfterFlush()
        if self.client.hasClientReadEnded { self.close() }
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.upstream = nil
        if !self.isEstablished {
            self.lastError = error
            self.connectNext()
            return
        }
        self.close()
    }
}

@available(*, unavailable)
extension Tunnel: Sendable {}
