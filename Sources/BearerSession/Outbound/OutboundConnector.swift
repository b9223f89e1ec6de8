import BearerCore
import BearerHTTP
import BearerIO

/// Makes TLS connections over a connected socket; `TLSContext` is the real one.
///
/// A protocol only so that a test can stand in a factory that fails, and show that an `https://`
/// target is then never spoken to in clear text.
package protocol TLSConnectionFactory: Sendable {
    func makeConnection(serverName: String?, sessionKey: String?) -> TLSConnection?
}

extension TLSContext: TLSConnectionFactory {}

/// The one way the proxy reaches anything outbound: upstreams, CONNECT targets, token, revocation
/// and login endpoints, the session store.
///
/// Resolve → try each address in turn → connect, all within `upstream_connect_timeout` → TLS when the
/// target asks for it. It fails closed: a target that needs TLS is never handed over as a plain
/// connection, whatever goes wrong on the way (no TLS context, a TLS object that cannot be made, a
/// failed handshake). Names and connections come from `network`: the kernel's, or a test's in memory.
package struct OutboundConnector: Sendable {
    let network: any StreamNetwork
    let tls: (any TLSConnectionFactory)?
    let connectTimeout: Duration

    package init(
        network: any StreamNetwork = SocketNetwork(),
        tls: (any TLSConnectionFactory)?,
        connectTimeout: Duration
    ) {
        self.network = network
        self.tls = tls
        self.connectTimeout = connectTimeout
    }

    /// Connects to `origin` (TLS for https); `completion` runs once, on `loop`.
    ///
    /// On success the stream is started and its delegate is the attempt: the completion must set its
    /// own delegate before returning. Must be called on `loop`.
    /// `offeringHTTP2`: TLS offers ALPN `h2, http/1.1` instead of `http/1.1` alone (the stream's
    /// `tls?.negotiatedProtocol` says what the server chose).
    @discardableResult
    package func connect(
        to origin: Origin,
        on loop: EventLoop,
        offeringHTTP2: Bool = false,
        _ completion: @escaping (Result<StreamConnection, OutboundError>) -> Void
    ) -> ConnectAttempt {
        self.connect(
            host: origin.host,
            port: origin.port,
            usesTLS: origin.isHTTPS,
            offeringHTTP2: offeringHTTP2,
            on: loop,
            completion
        )
    }

    /// Connects to `host:port`, with TLS when `usesTLS` (https, rediss).
    @discardableResult
    func connect(
        host: String,
        port: Int,
        usesTLS: Bool,
        offeringHTTP2: Bool = false,
        on loop: EventLoop,
        _ completion: @escaping (Result<StreamConnection, OutboundError>) -> Void
    ) -> ConnectAttempt {
        let security: ConnectAttempt.Security
        if !usesTLS {
            security = .plain
        } else if let tls = self.tls {
            security = .tls(tls)
        } else {
            security = .tlsUnavailable
        }
        let attempt = ConnectAttempt(
            host: host,
            port: port,
            security: security,
            offersHTTP2: offeringHTTP2,
            network: self.network,
            loop: loop,
            completion: completion
        )
        attempt.start(timeout: self.connectTimeout)
        return attempt
    }
}

/// Why an outbound connection could not be made, in words for a 502 body or a log line.
package enum OutboundError: Error, Equatable, Sendable {
    case resolveFailed(String)
    case connectFailed(String)
    case timedOut
    /// TLS is required but no TLS connection could be made: nothing was sent.
    case tlsUnavailable
    case tlsFailed(String)

    package var reason: String {
        switch self {
        case .resolveFailed(let reason): "cannot resolve: \(reason)"
        case .connectFailed(let reason): "cannot connect: \(reason)"
        case .timedOut: "connect timed out"
        case .tlsUnavailable: "TLS is required but could not be started; nothing was sent"
        case .tlsFailed(let reason): reason
        }
    }
}

/// One connection being made: resolving, then connecting to each address in turn, then the TLS
/// handshake. Confined to its loop.
package final class ConnectAttempt: StreamConnectionDelegate {
    private let host: String
    private let port: Int
    private let security: Security
    private let offersHTTP2: Bool
    /// Unowned and unchecked: the attempt runs on this loop, which outlives it.
    private unowned(unsafe) let loop: EventLoop
    private var completion: ((Result<StreamConnection, OutboundError>) -> Void)?
    private var remainingAddresses: [SocketAddress] = []
    private var lastError: IOError?
    private var stream: StreamConnection?
    private var timer: TimerID?
    private let network: any StreamNetwork

    enum Security {
        case plain
        case tls(any TLSConnectionFactory)
        /// TLS is required but there is no way to make it: the attempt fails before connecting.
        case tlsUnavailable
    }

    init(
        host: String,
        port: Int,
        security: Security,
        offersHTTP2: Bool = false,
        network: any StreamNetwork,
        loop: EventLoop,
        completion: @escaping (Result<StreamConnection, OutboundError>) -> Void
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.offersHTTP2 = offersHTTP2
        self.network = network
        self.loop = loop
        self.completion = completion
    }

    var isFinished: Bool { self.completion == nil }

    fileprivate func start(timeout: Duration) {
        self.loop.assertInEventLoop()
        // The timer holds the attempt until it ends; `finish` cancels it, so nothing outlives the attempt.
        self.timer = self.loop.schedule(after: timeout) { self.finish(.failure(.timedOut)) }
        if case .tlsUnavailable = self.security {
            self.finish(.failure(.tlsUnavailable))
            return
        }
        let this = UnsafeTransfer(self)
        self.network.resolve(host: self.host, port: self.port, on: self.loop) { answer in
            let attempt = this.value
            guard !attempt.isFinished else { return }
            switch answer {
            case .addresses(let addresses):
                attempt.remainingAddresses = addresses
                attempt.connectNextAddress()
            case .failed(let reason):
                attempt.finish(.failure(.resolveFailed(reason)))
            }
        }
    }

    /// Gives up: no completion runs, the socket (if any) is closed.
    package func cancel() {
        self.completion = nil
        self.end()
    }

    private func connectNextAddress() {
        guard !self.remainingAddresses.isEmpty else {
            self.finish(.failure(.connectFailed(self.lastError?.reason ?? "no address to connect to")))
            return
        }
        let address = self.remainingAddresses.removeFirst()
        let stream: StreamConnection
        do throws(IOError) {
            stream = try self.network.connect(to: address, on: self.loop)
        } catch {
            self.lastError = error
            self.connectNextAddress()
            return
        }
        if case .tls(let factory) = self.security {
            guard
                let connection = factory.makeConnection(
                    serverName: self.host,
                    sessionKey: Origin(isHTTPS: true, host: self.host, port: self.port).description
                )
            else {
                stream.close()
                self.finish(.failure(.tlsUnavailable))
                return
            }
            if self.offersHTTP2 { connection.offerHTTP2() }
            stream.useTLS(connection)
        }
        // Connected already (a unix socket) and without a handshake to wait for: done now.
        let isConnected = !stream.isConnecting
        self.stream = stream
        stream.start(delegate: self)
        if isConnected { self.finish(.success(stream)) }
    }

    private func finish(_ result: Result<StreamConnection, OutboundError>) {
        guard let completion = self.completion else { return }
        self.completion = nil
        if case .success = result {
            if let timer = self.timer { self.loop.cancel(timer) }
            self.timer = nil
            self.stream = nil
        } else {
            self.end()
        }
        completion(result)
    }

    private func end() {
        if let timer = self.timer { self.loop.cancel(timer) }
        self.timer = nil
        self.stream?.close()
        self.stream = nil
    }

    // MARK: StreamConnectionDelegate (until the stream is handed over)

    package func streamConnected(_ connection: StreamConnection) {
        guard connection === self.stream else { return }
        self.finish(.success(connection))
    }

    package func streamClosed(_ connection: StreamConnection, error: IOError?) {
        guard connection === self.stream else { return }
        self.stream = nil
        if let error, error.isTLSFailure {
            // Another address would present the same certificate: report the TLS problem.
            self.finish(.failure(.tlsFailed(error.reason)))
            return
        }
        self.lastError = error
        self.connectNextAddress()
    }

    package func streamReceived(_ connection: StreamConnection) {}
    package func streamReadEnded(_ connection: StreamConnection) {}
    package func streamWritable(_ connection: StreamConnection) {}
}

@available(*, unavailable)
extension ConnectAttempt: Sendable {}
