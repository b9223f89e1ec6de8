import BearerCore
import BearerIO

/// A CONNECT tunnel to a host that gets no token: bytes both ways, untouched, with backpressure.
/// The client connection hands its stream's events here once the tunnel exists. Confined to its loop.
final class Tunnel: StreamConnectionDelegate {
    private unowned let client: ClientConnection
    let origin: Origin
    private var upstream: StreamConnection?
    private var attempt: ConnectAttempt?
    private var isEstablished = false
    private var isClosed = false

    init(client: ClientConnection, origin: Origin) {
        self.client = client
        self.origin = origin
    }

    func connect(connector: OutboundConnector) {
        self.attempt = connector.connect(to: self.origin, on: self.client.loop) { result in
            self.attempt = nil
            switch result {
            case .success(let stream):
                self.upstream = stream
                stream.delegate = self
                self.established()
            case .failure(let error):
                self.isClosed = true
                self.client.tunnelFailed(ProxyError(error, origin: self.origin))
            }
        }
    }

    /// Ends both sides now.
    func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.attempt?.cancel()
        self.attempt = nil
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

    func streamConnected(_ connection: StreamConnection) {}

    private func established() {
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
        self.close()
    }
}

@available(*, unavailable)
extension Tunnel: Sendable {}
