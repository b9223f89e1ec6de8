import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// What an upstream connection reports to the client connection that leased it.
protocol UpstreamConnectionOwner: AnyObject {
    func upstreamConnected(_ upstream: UpstreamConnection)
    func upstreamConnectFailed(_ upstream: UpstreamConnection, _ error: ProxyError)
    func upstreamReceived(_ upstream: UpstreamConnection)
    func upstreamReadEnded(_ upstream: UpstreamConnection)
    func upstreamWritable(_ upstream: UpstreamConnection)
    func upstreamClosed(_ upstream: UpstreamConnection, error: IOError?)
}

/// One connection to an upstream origin: leased by one client connection at a time, idle in the
/// loop's pool in between. Confined to its loop.
final class UpstreamConnection: StreamConnectionDelegate {
    let origin: Origin
    unowned(unsafe) let loop: EventLoop
    private(set) var stream: StreamConnection?
    /// The client connection using it; nil while idle in the pool.
    var owner: UpstreamConnectionOwner?
    /// The loop's pool, which outlives its connections (a weak reference would slow every retain).
    let pool: UpstreamPool
    var parser = HTTPResponseParser()
    /// How many exchanges completed on it; above zero means a reused connection.
    var completedExchanges = 0
    private var state: State = .resolving
    private var remainingAddresses: [SocketAddress] = []
    private var lastConnectError: IOError?
    private var tlsContext: TLSContext?

    private enum State {
        case resolving
        case connecting
        case open
        case closed
    }

    init(origin: Origin, loop: EventLoop, pool: UpstreamPool) {
        self.origin = origin
        self.loop = loop
        self.pool = pool
    }

    var isOpen: Bool { self.state == .open && (self.stream?.isOpen ?? false) }

    // MARK: Connecting

    /// Resolves the origin and connects, trying each address in turn; the owner hears
    /// `upstreamConnected` or `upstreamConnectFailed`.
    func connect(resolver: Resolver, tls: TLSContext?) {
        self.tlsContext = tls
        let loop = self.loop
        let this = UnsafeTransfer(self)
        resolver.resolve(host: self.origin.host, port: self.origin.port, on: loop) { answer in
            let upstream = this.value
            guard upstream.state == .resolving, upstream.owner != nil else { return }
            switch answer {
            case .addresses(let addresses):
                upstream.remainingAddresses = addresses
                upstream.state = .connecting
                upstream.connectNextAddress()
            case .failed(let reason):
                upstream.state = .closed
                upstream.owner?.upstreamConnectFailed(
                    upstream,
                    .upstreamResolveFailed(origin: upstream.origin.description, reason: reason)
                )
            }
        }
    }

    private func connectNextAddress() {
        guard !self.remainingAddresses.isEmpty else {
            self.state = .closed
            let reason = self.lastConnectError?.reason ?? "no address to connect to"
            self.owner?.upstreamConnectFailed(
                self,
                .upstreamConnectFailed(origin: self.origin.description, reason: reason)
            )
            return
        }
        let address = self.remainingAddresses.removeFirst()
        do throws(IOError) {
            let (fd, isConnected) = try Socket.connect(to: address)
            let stream = StreamConnection(fd: fd, loop: self.loop, isConnecting: !isConnected)
            self.stream = stream
            if self.origin.isHTTPS {
                guard let context = self.tlsContext,
                    let tls = context.makeConnection(
                        fd: fd,
                        serverName: self.origin.host,
                        sessionKey: self.origin.description
                    )
                else {
                    stream.close()
                    self.stream = nil
                    self.state = .closed
                    self.owner?.upstreamConnectFailed(
                        self,
                        .upstreamTLSFailed(origin: self.origin.description, reason: "cannot start TLS")
                    )
                    return
                }
                stream.useTLS(tls)
            }
            stream.start(delegate: self)
            if isConnected && !self.origin.isHTTPS {
                self.state = .open
                self.owner?.upstreamConnected(self)
            }
        } catch {
            self.lastConnectError = error
            self.connectNextAddress()
        }
    }

    /// Closes the connection without telling the owner.
    func close() {
        self.state = .closed
        self.stream?.close()
        self.stream = nil
        self.owner = nil
    }

    // MARK: StreamConnectionDelegate

    func streamConnected(_ connection: StreamConnection) {
        self.state = .open
        self.owner?.upstreamConnected(self)
    }

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
        self.stream = nil
        if self.state == .connecting {
            if let error, error.isTLSFailure {
                // Another address would present the same certificate: report the TLS problem.
                self.state = .closed
                self.owner?.upstreamConnectFailed(
                    self,
                    .upstreamTLSFailed(origin: self.origin.description, reason: error.reason)
                )
                return
            }
            self.lastConnectError = error
            self.connectNextAddress()
            return
        }
        self.state = .closed
        if let owner = self.owner {
            owner.upstreamClosed(self, error: error)
        } else {
            self.pool.discard(self)
        }
    }
}

/// Carries a loop-confined value through a `@Sendable` closure that will run on that same loop.
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

@available(*, unavailable)
extension UpstreamConnection: Sendable {}
