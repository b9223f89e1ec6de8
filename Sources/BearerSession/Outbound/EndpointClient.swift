import BearerCore
import BearerHTTP
import BearerIO

/// A whole response from an endpoint the proxy calls on its own account.
package struct EndpointResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Why a call to an endpoint got no response.
package enum EndpointError: Error, Equatable, Sendable {
    case connect(OutboundError)
    /// Connected, but no complete answer in time.
    case responseTimedOut
    case connectionLost(String)
    /// TLS ended the connection after its handshake (a server that refused the client certificate).
    case tlsFailed(String)
    case malformedResponse(String)
    case responseTooLarge

    /// Whether the peer accepted the connection and then never answered (504 rather than 502).
    package var isTimeoutAfterConnect: Bool { self == .responseTimedOut }

    package var reason: String {
        switch self {
        case .connect(.tlsFailed(let reason)), .tlsFailed(let reason): "TLS failed: \(reason)"
        case .connect(let error): error.reason
        case .responseTimedOut: "no answer in time"
        case .connectionLost(let reason): "connection lost: \(reason)"
        case .malformedResponse(let reason): "malformed response: \(reason)"
        case .responseTooLarge: "response too large"
        }
    }
}

/// The proxy's own HTTP client, for the few requests it makes on its own account: token,
/// revocation and login endpoints. One request per connection, the whole response read into memory,
/// on an event loop without blocking it. Connections come from the `OutboundConnector`, so an
/// `https://` endpoint is never sent a byte in clear text. Confined to its loop.
final class EndpointClient: StreamConnectionDelegate {
    typealias Completion = @Sendable (Result<EndpointResponse, EndpointError>) -> Void

    /// Unowned and unchecked: the call runs on this loop, which outlives it.
    private unowned(unsafe) let loop: EventLoop
    private let request: [UInt8]
    private let maximumResponseBytes: Int
    private var completion: Completion?
    private var attempt: ConnectAttempt?
    private var stream: StreamConnection?
    private var parser = HTTPResponseParser(maximumHeadBytes: 64 * 1024)
    private var head: ResponseHead?
    private var body: [UInt8] = []
    private var timer: TimerID?

    /// Sends `request` (a complete HTTP/1.1 message) to `origin`; `completion` runs on `loop`, within
    /// `timeout` (connecting included). Safe from any thread.
    static func send(
        _ request: [UInt8],
        to origin: Origin,
        on loop: EventLoop,
        connector: OutboundConnector,
        timeout: Duration,
        maximumResponseBytes: Int = 1 << 20,
        completion: @escaping Completion
    ) {
        loop.execute {
            let client = EndpointClient(
                loop: loop,
                request: request,
                maximumResponseBytes: maximumResponseBytes,
                completion: completion
            )
            client.start(origin: origin, connector: connector, timeout: timeout)
        }
    }

    private init(loop: EventLoop, request: [UInt8], maximumResponseBytes: Int, completion: @escaping Completion) {
        self.loop = loop
        self.request = request
        self.maximumResponseBytes = maximumResponseBytes
        self.completion = completion
    }

    private func start(origin: Origin, connector: OutboundConnector, timeout: Duration) {
        // The timer holds the client until the call ends; `finish` cancels it.
        self.timer = self.loop.schedule(after: timeout) {
            self.finish(.failure(self.stream == nil ? .connect(.timedOut) : .responseTimedOut))
        }
        self.attempt = connector.connect(to: origin, on: self.loop) { result in
            self.attempt = nil
            switch result {
            case .success(let stream):
                self.stream = stream
                stream.delegate = self
                self.parser.expectResponse(to: .post)
                stream.write(self.request)
                stream.flush()
            case .failure(let error):
                self.finish(.failure(.connect(error)))
            }
        }
    }

    private func finish(_ result: Result<EndpointResponse, EndpointError>) {
        guard let completion = self.completion else { return }
        self.completion = nil
        if let timer = self.timer { self.loop.cancel(timer) }
        self.timer = nil
        self.attempt?.cancel()
        self.attempt = nil
        self.stream?.close()
        self.stream = nil
        completion(result)
    }

    func streamReceived(_ connection: StreamConnection) {
        while self.completion != nil {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try connection.inbound.parseNext(payload: { bytes in self.body.append(contentsOf: bytes) }) {
                    raw throws(HTTPParseError) in
                    try self.parser.next(raw)
                }
            } catch {
                self.finish(.failure(.malformedResponse(error.message)))
                return
            }
            switch event {
            case .needMore:
                return
            case .head(let head, _):
                if !head.isInformational { self.head = head }
            case .body:
                if self.body.count > self.maximumResponseBytes {
                    self.finish(.failure(.responseTooLarge))
                    return
                }
            case .end:
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
        self.finish(.success(EndpointResponse(status: head.status, headers: headers, body: self.body)))
    }

    func streamReadEnded(_ connection: StreamConnection) {
        if self.head != nil && self.parser.canEndAtEndOfInput {
            self.complete()
        } else {
            self.finish(.failure(.connectionLost("closed before a complete response")))
        }
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.stream = nil
        if let error, error.isTLSFailure {
            self.finish(.failure(.tlsFailed(error.reason)))
            return
        }
        self.finish(.failure(.connectionLost(error?.reason ?? "closed")))
    }

    func streamConnected(_ connection: StreamConnection) {}
    func streamWritable(_ connection: StreamConnection) {}
}

@available(*, unavailable)
extension EndpointClient: Sendable {}
