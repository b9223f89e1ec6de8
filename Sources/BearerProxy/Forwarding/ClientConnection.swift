import BearerCore
import BearerHTTP
import BearerIO
import Foundation

/// One client connection: parses its requests, forwards each upstream with the token, streams the
/// response back, one exchange at a time (pipelined requests wait their turn, so responses stay in
/// order). Confined to its loop.
final class ClientConnection: StreamConnectionDelegate, TokenWaiter {
    let stream: StreamConnection
    let context: LoopContext
    var parser: HTTPRequestParser
    var exchange: Exchange?
    /// Close once the current exchange ends (client asked, HTTP/1.0, an error, an early response).
    var closesAfterExchange = false
    var hasClientReadEnded = false
    var isClosed = false

    var deadline: Instant?
    var deadlineKind: DeadlineKind = .idle
    var timer: TimerID?
    var timerDeadline: Instant?
    /// When the first byte of the request head now arriving was read.
    var headStartedAt: Instant?
    /// The latest request head and when it arrived (for logging a response without an exchange).
    var lastHead: RequestHead?
    var lastHeadAt: Instant?

    /// Pending writes above this stop reading from the other side.
    static let highWatermark = 256 * 1024
    /// Bytes read ahead from the client (pipelined requests, body not yet forwardable) above this
    /// stop reading from it.
    static let readAheadLimit = 64 * 1024

    var runtime: ProxyRuntime { self.context.runtime }
    var configuration: Configuration { self.context.runtime.configuration }
    var loop: EventLoop { self.context.loop }

    /// Accepted on a unix socket: no browser can reach it, so any Host is fine.
    let isFromUnixSocket: Bool
    /// A CONNECT tunnel this connection turned into (bytes pass through untouched).
    var tunnel: Tunnel?
    /// After CONNECT to an inject host: the requests inside go to this target, with the token.
    var tunnelTarget: Target?
    /// The first byte inside a served tunnel is still to be checked (TLS cannot be served).
    var isAwaitingTunnelFirstByte = false

    init(stream: StreamConnection, context: LoopContext, isFromUnixSocket: Bool) {
        self.stream = stream
        self.context = context
        self.isFromUnixSocket = isFromUnixSocket
        self.parser = HTTPRequestParser(maximumHeadBytes: context.runtime.configuration.maxHeaderBytes)
    }

    func start() {
        self.context.clients[ObjectIdentifier(self)] = self
        self.stream.start(delegate: self)
        self.setDeadline(.idle, after: self.configuration.clientIdleTimeout)
    }

    // MARK: StreamConnectionDelegate

    func streamReceived(_ connection: StreamConnection) {
        if let tunnel = self.tunnel { return tunnel.clientReceived() }
        self.processClientInput()
    }

    func streamReadEnded(_ connection: StreamConnection) {
        self.hasClientReadEnded = true
        if let tunnel = self.tunnel { return tunnel.clientReadEnded() }
        guard let exchange = self.exchange else {
            // Between requests (or inside an unfinished head): nothing more will come; close.
            self.stream.closeAfterFlush()
            return
        }
        if exchange.isRequestComplete {
            // A half-close after a complete request: deliver the response, then close.
            self.closesAfterExchange = true
        } else {
            self.abort(reason: "client closed the connection mid-request")
        }
    }

    func streamWritable(_ connection: StreamConnection) {
        if let tunnel = self.tunnel { return tunnel.clientWritable() }
        guard let exchange = self.exchange, exchange.isUpstreamPaused, let upstream = exchange.upstream else { return }
        exchange.isUpstreamPaused = false
        self.processUpstreamInput(upstream)
        if let current = self.exchange, current === exchange, !exchange.isUpstreamPaused {
            upstream.stream.setReading(true)
        }
    }

    func streamConnected(_ connection: StreamConnection) {}

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        if let error, self.exchange != nil {
            self.runtime.logger.debug("client connection failed", ["error": error.description])
        }
        self.cleanUp()
    }

    // MARK: Ending

    /// Shutting down: an idle connection closes now; a busy one closes once its response is out.
    func drain() {
        guard !self.isClosed else { return }
        self.closesAfterExchange = true
        if self.exchange == nil {
            self.stream.closeAfterFlush()
            if self.stream.isClosed { self.cleanUp() }
        }
    }

    /// Ends the connection at once: the upstream connection is closed (not pooled), the client's
    /// socket too. Used when the client vanished or a response can no longer be completed.
    func abort(reason: String) {
        self.runtime.logger.debug("exchange aborted", ["reason": reason])
        self.stream.close()
        self.cleanUp()
    }

    /// Releases everything the connection holds. Idempotent.
    func cleanUp() {
        guard !self.isClosed else { return }
        self.isClosed = true
        if let timer = self.timer { self.loop.cancel(timer) }
        self.timer = nil
        if let tunnel = self.tunnel {
            self.tunnel = nil
            tunnel.close()
        }
        if let exchange = self.exchange {
            self.endExchange(exchange)
            exchange.connectAttempt?.cancel()
            exchange.upstream?.close()
            exchange.upstream = nil
            self.exchange = nil
        }
        self.context.clients[ObjectIdentifier(self)] = nil
        self.runtime.openConnections.subtract(1, ordering: .relaxed)
    }

    /// Answers the current request (if any) with the proxy's own response.
    ///
    /// The connection closes afterwards when the error was in the request's framing, when part of a
    /// request body is still unread, or when it was going to close anyway.
    func respond(with error: ProxyError) {
        if let exchange = self.exchange {
            if exchange.isResponseHeadSent {
                self.abort(reason: error.shortName)
                return
            }
            exchange.upstream?.close()
            exchange.upstream = nil
            if !exchange.isRequestComplete { self.closesAfterExchange = true }
            self.endExchange(exchange)
            self.exchange = nil
        }
        if case .malformedRequest = error { self.closesAfterExchange = true }
        if self.hasClientReadEnded { self.closesAfterExchange = true }
        let close = self.closesAfterExchange
        self.runtime.logger.debug("responded with an error", ["status": "\(error.status)", "error": error.shortName])
        self.recordCompletion(
            status: error.status,
            head: self.lastHead,
            bytes: error.message.utf8.count + 1,
            startedAt: self.lastHeadAt,
            replayed: false
        )
        self.stream.withOutbound {
            $0.writeProxyResponse(
                status: error.status,
                message: error.message,
                close: close,
                extraFields: error.extraFields
            )
        }
        self.exchangeEnded()
    }

    // MARK: CONNECT

    /// Opens a byte tunnel to a host that gets no token.
    func openTunnel(to origin: Origin) {
        self.clearDeadline()
        self.stream.setReading(false)
        let tunnel = Tunnel(client: self, origin: origin)
        self.tunnel = tunnel
        self.runtime.logger.debug("tunnel", ["to": origin.description])
        tunnel.connect(connector: self.runtime.connector)
    }

    func tunnelFailed(_ error: ProxyError) {
        self.tunnel = nil
        self.closesAfterExchange = true
        self.respond(with: error)
    }

    func tunnelEnded() {
        guard self.tunnel != nil || !self.isClosed else { return }
        self.tunnel = nil
        self.stream.close()
        self.cleanUp()
    }

    /// Answers a CONNECT to an inject host itself: the requests inside are read here and sent to
    /// `target` with the token.
    func serveTunnel(to target: Target) {
        self.tunnelTarget = target
        self.isAwaitingTunnelFirstByte = true
        self.stream.withOutbound { $0.writeStaticString("HTTP/1.1 200 Connection established\r\n\r\n") }
        self.recordCompletion(status: 200, head: self.lastHead, bytes: 0, startedAt: self.lastHeadAt, replayed: false)
        self.exchangeEnded()
    }

    /// Counts a finished request and writes its access log line.
    func recordCompletion(status: Int, head: RequestHead?, bytes: Int, startedAt: Instant?, replayed: Bool) {
        let seconds = startedAt.map { (self.loop.now - $0).seconds } ?? 0
        self.context.metrics.recordRequest(status: status, seconds: seconds)
        guard let accessLog = self.runtime.accessLog else { return }
        var line = formatTimestamp(wallClockSeconds())
        line += " method=" + (head.map { logfmtValue($0.string($0.methodRange)) } ?? "-")
        line +=
            " host="
            + logfmtValue(
                self.exchange?.target.origin.description ?? head?.hostAuthority.map { head!.string($0.host) } ?? "-"
            )
        line += " path=" + (head.map { logfmtValue(oneLine($0.string($0.target), limit: 512)) } ?? "-")
        line +=
            " status=\(status) bytes=\(bytes) duration_ms=\(String(format: "%.2f", seconds * 1000)) replayed=\(replayed ? "yes" : "no")\n"
        accessLog.write(line)
    }

    /// Lets go of what an exchange holds outside this connection: a place in the token session's
    /// queue, replay memory.
    func endExchange(_ exchange: Exchange) {
        if let id = exchange.waiterID {
            self.runtime.session.cancel(id)
            exchange.waiterID = nil
        }
        if exchange.replayReserved > 0 {
            self.runtime.releaseReplayMemory(exchange.replayReserved)
            exchange.replayReserved = 0
            exchange.replayBody = ByteBuffer()
        }
    }

    /// The token session answered for a parked exchange (on this loop).
    func tokenGranted(_ id: TokenSession.WaiterID, _ grant: TokenSession.Grant) {
        guard !self.isClosed, let exchange = self.exchange, exchange.waiterID == id else { return }
        exchange.waiterID = nil
        self.clearDeadline()
        switch grant {
        case .token(let line, let generation):
            exchange.authorization = line
            exchange.generation = generation
            if exchange.wasRejected {
                self.context.metrics.replays += 1
                self.prepareReplay(exchange)
            }
            self.connectUpstream(exchange, allowReuse: true)
        case .failed(let failure):
            self.respond(with: .session(failure))
        }
    }

    /// Resets the response side of an exchange so it can be sent again.
    func prepareReplay(_ exchange: Exchange) {
        exchange.isReplay = true
        exchange.hasResponseStarted = false
        exchange.responseHead = nil
        exchange.isRequestHeadSent = false
        exchange.isUpstreamPaused = false
    }

    /// After a response is complete: close, or wait for (or process) the next request.
    func exchangeEnded() {
        if self.closesAfterExchange {
            self.stream.closeAfterFlush()
            return
        }
        self.stream.flush()
        guard !self.stream.isClosed else { return }
        self.setDeadline(.idle, after: self.configuration.clientIdleTimeout)
        self.stream.setReading(true)
        if !self.stream.inbound.isEmpty { self.processClientInput() }
    }
}

@available(*, unavailable)
extension ClientConnection: Sendable {}
