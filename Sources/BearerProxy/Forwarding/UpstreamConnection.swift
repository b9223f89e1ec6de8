import BearerCore
import BearerHTTP
import BearerIO

/// What an upstream connection reports to whoever holds it: a client connection, a drainer.
protocol UpstreamConnectionOwner: AnyObject {
    func upstreamReceived(_ upstream: UpstreamConnection)
    func upstreamReadEnded(_ upstream: UpstreamConnection)
    func upstreamWritable(_ upstream: UpstreamConnection)
    func upstreamClosed(_ upstream: UpstreamConnection, error: IOError?)
}

/// One open connection to an upstream origin (made by the `OutboundConnector`): leased by one
/// client connection at a time, idle in the loop's pool in between. Confined to its loop.
final class UpstreamConnection: StreamConnectionDelegate {
    let origin: Origin
    let stream: StreamConnection
    /// Who hears of this connection's events; nil while idle in the pool.
    @exclusivity(unchecked) var owner: UpstreamConnectionOwner?
    /// The loop's pool, which outlives its connections (a weak reference would slow every retain).
    let pool: UpstreamPool
    @exclusivity(unchecked) var parser = HTTPResponseParser()
    /// How many exchanges completed on it; above zero means a reused connection.
    @exclusivity(unchecked) var completedExchanges = 0
    @exclusivity(unchecked) private(set) var isClosed = false
    /// The stream is one stream of a shared HTTP/2 connection (`HTTP2UpstreamStream`): it carries
    /// one exchange and is never pooled.
    let isHTTP2Stream: Bool

    /// Takes over a connected stream (its delegate becomes this connection).
    init(stream: StreamConnection, origin: Origin, pool: UpstreamPool, isHTTP2Stream: Bool = false) {
        self.stream = stream
        self.origin = origin
        self.pool = pool
        self.isHTTP2Stream = isHTTP2Stream
        stream.delegate = self
    }

    var isOpen: Bool { !self.isClosed && self.stream.isOpen }

    /// Closes the connection without telling the owner.
    func close() {
        self.isClosed = true
        self.stream.close()
        self.owner = nil
    }

    // MARK: StreamConnectionDelegate

    func streamReceived(_ connection: StreamConnection) {
        if let owner = self.owner {
            owner.upstreamReceived(self)
        } else {
            // Bytes on an idle connection: the upstream is confused or closing. Do not reuse it.
            self.pool.discard(self)
        }
    }

    func streamReadEnded(_ connection: StreamConnection) {
        if let owner = self.owner {
            owner.upstreamReadEnded(self)
        } else {
            self.pool.discard(self)
        }
    }

    func streamWritable(_ connection: StreamConnection) {
        self.owner?.upstreamWritable(self)
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.isClosed = true
        if let owner = self.owner {
            owner.upstreamClosed(self, error: error)
        } else {
            self.pool.discard(self)
        }
    }

    func streamConnected(_ connection: StreamConnection) {}
}

@available(*, unavailable)
extension UpstreamConnection: Sendable {}
