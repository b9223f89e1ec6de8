import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO
import BearerSession

/// The HTTP/2 upstream connections of one event loop, per origin: every exchange of the loop whose
/// session speaks HTTP/2 to its upstream (`upstream_http2`) gets a stream of one of them, a new
/// connection being made only when the others have no room (the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS). Origins whose TLS chose HTTP/1.1 by ALPN are remembered and
/// spoken to in HTTP/1.1 from then on, through the ordinary `UpstreamPool`. Confined to its loop.
final class HTTP2UpstreamPool {
    /// What a waiting exchange gets.
    enum Lease {
        /// The near end of a stream's pipe: an upstream connection for one exchange.
        case stream(StreamConnection)
        /// The server chose HTTP/1.1: the connection to use as a plain one, or nil to make one.
        case http1(StreamConnection?)
        case failed(OutboundError)
    }

    /// An exchange waiting for its stream; cancelled when the exchange ends first.
    final class Waiter {
        private var completion: ((Lease) -> Void)?

        init(_ completion: @escaping (Lease) -> Void) {
            self.completion = completion
        }

        var isCancelled: Bool { self.completion == nil }

        func cancel() { self.completion = nil }

        /// Hands over the lease; a cancelled waiter's connection is closed.
        func deliver(_ lease: Lease) {
            guard let completion = self.completion else {
                if case .stream(let stream) = lease { stream.close() }
                if case .http1(let stream?) = lease { stream.close() }
                return
            }
            self.completion = nil
            completion(lease)
        }
    }

    unowned let loop: EventLoop
    let connector: OutboundConnector
    let logger: Logger
    let maxHeaderBytes: Int
    /// How long a new connection's server has to answer the preface with SETTINGS
    /// (upstream_connect_timeout): one that does not is no HTTP/2 server, and is given up.
    let settingsTimeout: Duration
    /// Counts trailers that reached no client (`bearer_proxy_trailers_dropped_total`).
    let trailersDropped: () -> Void
    /// Counts calls whose UNAUTHENTICATED came in trailers, after response DATA reached the client,
    /// too late to replay (`bearer_proxy_grpc_unauthenticated_unreplayable_total`).
    let grpcUnauthenticatedUnreplayable: () -> Void
    @exclusivity(unchecked) private var connections: [HTTP2UpstreamConnection] = []
    @exclusivity(unchecked) private var http1Origins: [Origin] = []

    init(
        loop: EventLoop,
        connector: OutboundConnector,
        logger: Logger,
        maxHeaderBytes: Int,
        settingsTimeout: Duration,
        trailersDropped: @escaping () -> Void,
        grpcUnauthenticatedUnreplayable: @escaping () -> Void = {}
    ) {
        self.settingsTimeout = settingsTimeout
        self.loop = loop
        self.connector = connector
        self.logger = logger
        self.maxHeaderBytes = maxHeaderBytes
        self.trailersDropped = trailersDropped
        self.grpcUnauthenticatedUnreplayable = grpcUnauthenticatedUnreplayable
    }

    /// Whether a request of a session with `setting` goes to `origin` in HTTP/2: `auto` offers it
    /// to https origins by ALPN, `on` also speaks it with prior knowledge to http ones, `off` never.
    func speaksHTTP2(to origin: Origin, _ setting: UpstreamHTTP2Setting) -> Bool {
        switch setting {
        case .off: return false
        case .auto: if !origin.isHTTPS { return false }
        case .on: break
        }
        return !self.http1Origins.contains(origin)
    }

    /// A stream to `origin` for a waiting exchange: on a connection with room, else a new one.
    func lease(_ origin: Origin, _ waiter: Waiter) {
        if let connection = self.connections.first(where: { $0.origin == origin && $0.hasRoom }) {
            connection.wait(waiter)
            return
        }
        let connection = HTTP2UpstreamConnection(origin: origin, pool: self)
        self.connections.append(connection)
        connection.connect(waiter)
    }

    /// A stream the server refused or never processed, opened again on a connection with room.
    func reattach(_ stream: HTTP2UpstreamStream) {
        if let connection = self.connections.first(where: { $0.origin == stream.origin && $0.hasRoom }) {
            connection.adopt(stream)
            return
        }
        if self.http1Origins.contains(stream.origin) { return stream.fail() }
        let connection = HTTP2UpstreamConnection(origin: stream.origin, pool: self)
        self.connections.append(connection)
        connection.adopt(stream)
        connection.connect(nil)
    }

    func originSpeaksHTTP1(_ origin: Origin) {
        if !self.http1Origins.contains(origin) { self.http1Origins.append(origin) }
    }

    /// Forgets a connection that closed or is going away (no new stream goes to it).
    func remove(_ connection: HTTP2UpstreamConnection) {
        self.connections.removeAll { $0 === connection }
    }

    /// How many connections are open (tests, /metrics).
    var connectionCount: Int { self.connections.count }

    func closeAll() {
        for connection in self.connections { connection.close() }
        self.connections.removeAll()
    }
}

@available(*, unavailable)
extension HTTP2UpstreamPool: Sendable {}
