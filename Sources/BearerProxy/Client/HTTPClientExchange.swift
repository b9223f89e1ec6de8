import BearerCore
import BearerHTTP
import BearerIO

/// A whole response to a request the proxy made itself (the token endpoint, revocation).
package struct ClientResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Why a request the proxy made itself got no response.
package enum ClientExchangeError: Error, Equatable, Sendable {
    case resolveFailed(String)
    case connectFailed(String)
    case connectTimedOut
    /// Connected, but no complete answer in time.
    case responseTimedOut
    case connectionLost(String)
    case malformedResponse(String)
    case responseTooLarge
    case tlsUnavailable
    case tlsFailed(String)

    /// Whether the peer accepted the connection and then never answered (504 rather than 502).
    package var isTimeoutAfterConnect: Bool { self == .responseTimedOut }

    package var reason: String {
        switch self {
        case .resolveFailed(let reason): "cannot resolve: \(reason)"
        case .connectFailed(let reason): "cannot connect: \(reason)"
        case .connectTimedOut: "connect timed out"
        case .responseTimedOut: "no answer in time"
        case .connectionLost(let reason): "connection lost: \(reason)"
        case .malformedResponse(let reason): "malformed response: \(reason)"
        case .responseTooLarge: "response too large"
        case .tlsUnavailable: "TLS is not configured"
        case .tlsFailed(let reason): "TLS failed: \(reason)"
        }
    }
}

/// One request on a new connection, the whole response read into memory: for the few requests the
/// proxy makes on its own account. Runs on an event loop, never blocking it. Confined to its loop.
final class HTTPClientExchange: StreamConnectionDelegate {
    typealias Completion = @Sendable (Result<ClientResponse, ClientExchangeError>) -> Void

    private let origin: Origin
    private unowned let loop: EventLoop
    private let request: [UInt8]
    private let maximumResponseBytes: Int
    private var completion: Completion?
    private var stream: StreamConnection?
    private var parser = HTTPResponseParser(maximumHeadBytes: 64 * 1024)
    private var head: ResponseHead?
    private var body: [UInt8] = []
    private var remainingAddresses: [SocketAddress] = []
    private var lastError: IOError?
    private var timer: TimerID?
    private var isConnected = false
    private var keepAlive: HTTPClientExchange?
    private var tlsContext: TLSContext?

    /// Sends `request` (a complete HTTP/1.1 message) to `origin`; `completion` runs on `loop`.
    static func run(
        origin: Origin,
        request: [UInt8],
        on loop: EventLoop,
        resolver: Resolver,
        tls: TLSContext?,
        connectTimeout: Duration,
        totalTimeout: Duration,
        maximumResponseBytes: Int = 1 << 20,
        completion: @escaping Completion
    ) {
        let tls = UnsafeTransfer(tls)
        loop.execute {
            let exchange = HTTPClientExchange(
                origin: origin,
                loop: loop,
                request: request,
                maximumResponseBytes: maximumResponseBytes,
                completion: completion
            )
            exchange.tlsContext = tls.value
            exchange.start(resolver: resolver, connectTimeout: connectTimeout, totalTimeout: totalTimeout)
        }
    }

    private init(
        origin: Origin,
        loop: EventLoop,
        request: [UInt8],
        maximumResponseBytes: Int,
        completion: @escaping Completion
    ) {
        self.origin = origin
        self.loop = loop
        self.request = request
        self.maximumResponseBytes = maximumResponseBytes
        self.completion = completion
    }

    private func start(resolver: Resolver, connectTimeout: Duration, totalTimeout: Duration) {
        self.keepAlive = self
        if self.origin.isHTTPS && self.tlsContext == nil {
            self.finish(.failure(.tlsUnavailable))
            return
        }
        self.timer = self.loop.schedule(after: min(connectTimeout, totalTimeout)) { [weak self] in
            guard let self else { return }
            if self.isConnected {
                self.timer = self.loop.schedule(after: totalTimeout - connectTimeout) { [weak self] in
                    self?.finish(.failure(.responseTimedOut))
                }
            } else {
                self.finish(.failure(.connectTimedOut))
            }
        }
        let this = UnsafeTransfer(self)
        resolver.resolve(host: self.origin.host, port: self.origin.port, on: self.loop) { answer in
            let exchange = this.value
            guard exchange.completion != nil else { return }
            switch answer {
            case .addresses(let addresses):
                exchange.remainingAddresses = addresses
                exchange.connectNext()
            case .failed(let reason):
                exchange.finish(.failure(.resolveFailed(reason)))
            }
        }
    }

    private func connectNext() {
        guard !self.remainingAddresses.isEmpty else {
            self.finish(.failure(.connectFailed(self.lastError?.reason ?? "no address")))
            return
        }
        let address = self.remainingAddresses.removeFirst()
        do throws(IOError) {
            let (fd, connected) = try Socket.connect(to: address)
            let stream = StreamConnection(fd: fd, loop: self.loop, isConnecting: !connected)
            self.stream = stream
            if self.origin.isHTTPS, let context = self.tlsContext,
                let tls = context.makeConnection(
                    fd: fd,
                    serverName: self.origin.host,
                    sessionKey: self.origin.description
                )
            {
                stream.useTLS(tls)
            }
            stream.start(delegate: self)
            if connected && !self.origin.isHTTPS { self.streamConnected(stream) }
        } catch {
            self.lastError = error
            self.connectNext()
        }
    }

    private func finish(_ result: Result<ClientResponse, ClientExchangeError>) {
        guard let completion = self.completion else { return }
        self.completion = nil
        if let timer = self.timer { self.loop.cancel(timer) }
        self.stream?.close()
        self.stream = nil
        completion(result)
        self.keepAlive = nil
    }

    func streamConnected(_ connection: StreamConnection) {
        guard !self.isConnected else { return }
        self.isConnected = true
        self.parser.expectResponse(to: .post)
        connection.write(self.request)
        connection.flush()
    }

    func streamReceived(_ connection: StreamConnection) {
        while self.completion != nil {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try connection.inbound.withUnsafeReadableBytes { raw throws(HTTPParseError) in
                    try self.parser.next(raw)
                }
            } catch {
                self.finish(.failure(.malformedResponse(error.message)))
                return
            }
            switch event {
            case .needMore(let consumed):
                connection.inbound.moveReaderIndex(forwardBy: consumed)
                return
            case .head(let head, let consumed):
                connection.inbound.moveReaderIndex(forwardBy: consumed)
                if !head.isInformational { self.head = head }
            case .body(let range):
                connection.inbound.withUnsafeReadableBytes { raw in
                    self.body.append(
                        contentsOf: UnsafeRawBufferPointer(rebasing: raw[range]).bindMemory(to: UInt8.self)
                    )
                }
                connection.inbound.moveReaderIndex(forwardBy: range.upperBound)
                if self.body.count > self.maximumResponseBytes {
                    self.finish(.failure(.responseTooLarge))
                    return
                }
            case .end(let consumed):
                connection.inbound.moveReaderIndex(forwardBy: consumed)
                self.complete()
                return
            }
        }
    }

    private func complete() {
        guard let head = self.head else {
            self.finish(.failure(.malformedResponse("no response head")))
            return
        }
        let headers = head.fields.map { (name: head.string($0.name), value: head.string($0.value)) }
        self.finish(.success(ClientResponse(status: head.status, headers: headers, body: self.body)))
    }

    func streamReadEnded(_ connection: StreamConnection) {
        if self.head != nil && self.parser.canEndAtEndOfInput {
            self.complete()
        } else {
            self.finish(.failure(.connectionLost("closed before a complete response")))
        }
    }

    func streamWritable(_ connection: StreamConnection) {}

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.stream = nil
        if !self.isConnected {
            if let error, error.isTLSFailure {
                self.finish(.failure(.tlsFailed(error.reason)))
                return
            }
            self.lastError = error
            self.connectNext()
            return
        }
        self.finish(.failure(.connectionLost(error?.reason ?? "closed")))
    }
}

@available(*, unavailable)
extension HTTPClientExchange: Sendable {}
