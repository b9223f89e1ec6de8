import BearerCore
import BearerHTTP
import BearerIO
import Dispatch
import Glibc
import Synchronization

/// A small HTTP/1.1 server on the library's own event loops, for tests, the bench and `--demo`.
///
/// It answers each request with what its handler returns, counts connections and requests so tests
/// can assert on pooling, and can misbehave on purpose (resets, garbage, hangs).
package final class MockHTTPServer: Sendable {
    package typealias Handler = @Sendable (MockRequest) -> MockResponse
    /// Decides, when a request arrives with `Expect: 100-continue`, whether to answer before the body
    /// (return a response) or to send 100 Continue (return nil).
    package typealias ExpectHandler = @Sendable (RequestHead) -> MockResponse?

    let handler: Handler
    let expectHandler: ExpectHandler?
    /// Serve HTTPS with this context.
    let tls: TLSContext?
    let group: EventLoopGroup
    /// Where it listens: the kernel's sockets, or a test's memory network.
    let network: any StreamNetwork
    private let endpoint: Locked<ListeningEndpoint?>
    private let listeners: Locked<[UnsafeTransfer<Listener>]>
    private let connections: Locked<[ObjectIdentifier: UnsafeTransfer<MockServerConnection>]>
    package let acceptedConnections = Atomic<Int>(0)
    /// TLS connections whose client resumed an earlier session.
    package let resumedTLSSessions = Atomic<Int>(0)
    package let handledRequests = Atomic<Int>(0)
    /// Body bytes of streamed responses (`/bytes/N`, `/chunked/N`) written so far: how far a client
    /// (the proxy) let a large response go before it stopped reading.
    package let streamedBodyBytes = Atomic<Int>(0)
    package let address: Locked<SocketAddress?>

    package init(
        group: EventLoopGroup,
        tls: TLSContext? = nil,
        network: any StreamNetwork = SocketNetwork(),
        expectHandler: ExpectHandler? = nil,
        handler: @escaping Handler
    ) {
        self.group = group
        self.network = network
        self.tls = tls
        self.handler = handler
        self.expectHandler = expectHandler
        self.endpoint = Locked(nil)
        self.listeners = Locked([])
        self.connections = Locked([:])
        self.address = Locked(nil)
    }

    /// Starts listening (port 0 picks a free port) and returns the bound address.
    @discardableResult
    package func start(
        on address: SocketAddress = SocketAddress(ipAddress: "127.0.0.1", port: 0)!
    ) throws(IOError) -> SocketAddress {
        let endpoint = try self.network.listen(on: address)
        self.endpoint.withLock { $0 = endpoint }
        let bound = endpoint.address
        self.address.withLock { $0 = bound }
        for loop in self.group.loops {
            loop.executeAndWait {
                let listener = Listener(
                    endpoint: endpoint,
                    loop: loop,
                    onAccept: { stream in
                        self.acceptedConnections.add(1, ordering: .relaxed)
                        if let tls = self.tls,
                            let session = tls.makeConnection(serverName: nil, sessionKey: nil)
                        {
                            stream.useTLS(session)
                        }
                        let connection = MockServerConnection(stream: stream, server: self)
                        self.connections.withLock { $0[ObjectIdentifier(connection)] = UnsafeTransfer(connection) }
                        connection.start()
                    },
                    onAcceptError: { _ in }
                )
                listener.start()
                self.listeners.withLock { $0.append(UnsafeTransfer(listener)) }
            }
        }
        return bound
    }

    package var port: Int { self.address.withLock { $0?.port ?? 0 } }

    /// `http://127.0.0.1:PORT` (https when serving TLS)
    package var baseURL: String { "\(self.tls == nil ? "http" : "https")://127.0.0.1:\(self.port)" }

    /// Connections accepted and not closed yet: a test sees the proxy let one go.
    package var openConnections: Int { self.connections.withLock { $0.count } }

    func connectionClosed(_ connection: MockServerConnection) {
        self.connections.withLock { $0[ObjectIdentifier(connection)] = nil }
    }

    /// Stops listening and closes every connection.
    package func stop() {
        guard let endpoint = self.endpoint.withLock({ $0 }) else { return }
        for loop in self.group.loops {
            loop.executeAndWait {
                for listener in self.listeners.withLock({ $0 }) where listener.value.loop === loop {
                    listener.value.stop()
                }
                let mine = self.connections.withLock { $0.values.filter { $0.value.stream.loop === loop } }
                for connection in mine { connection.value.close() }
            }
        }
        endpoint.close()
        if case .unix(let path) = endpoint.address { unlink(path) }
        self.endpoint.withLock { $0 = nil }
    }
}
