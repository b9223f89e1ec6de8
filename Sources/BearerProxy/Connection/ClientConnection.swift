import BearerCore
import BearerHTTP
import BearerIO
import BearerSession

/// One client connection on its loop: moves bytes, parses them, and performs what its
/// `ClientConnectionStateMachine` decides. Nothing is decided here but the mechanics of I/O: when to
/// parse (the machine says which side it reads), when to pause reading (buffers above their
/// watermarks), when to flush (once per pass over the input).
///
/// Every entry point (a stream event, a token grant, a finished connect, the timer) feeds the
/// machine and then runs `pump()`, which parses what can be parsed now. Actions never call back into
/// the pump, so nothing recurses however many pipelined requests arrive at once. Confined to its loop.
final class ClientConnection {
    let stream: StreamConnection
    let context: LoopContext
    @exclusivity(unchecked) var machine: ClientConnectionStateMachine
    @exclusivity(unchecked) var parser: HTTPRequestParser
    /// The upstream connection in use: leased for the current exchange, or the far end of a relay.
    @exclusivity(unchecked) var upstream: UpstreamConnection?
    /// `upstream.stream.bytesSent` when the current request was written on it: unchanged means not a
    /// byte of it reached the connection.
    @exclusivity(unchecked) var upstreamBytesSentBeforeRequest = 0
    /// An outbound connection being made for this connection.
    @exclusivity(unchecked) var connectAttempt: ConnectAttempt?
    /// The trailer field lines of the upstream's chunked response that just ended (empty: none),
    /// until the exchange finishes and passes them on or drops them.
    @exclusivity(unchecked) var upstreamTrailers: [UInt8] = []
    /// The `grpc-status` of the exchange's answer, for its access log line: a Trailers-Only head's,
    /// else its trailers'. Nil for anything but a gRPC call.
    @exclusivity(unchecked) var grpcStatus: Int?
    /// Waiting for a stream of an HTTP/2 upstream connection (`upstream_http2`).
    @exclusivity(unchecked) var http2Waiter: HTTP2UpstreamPool.Waiter?
    @exclusivity(unchecked) private var timer = DeadlineTimer()
    @exclusivity(unchecked) private var isPumping = false
    @exclusivity(unchecked) private var needsAnotherPass = false
    /// Counts the events fed to the machine: a pass of the pump that fed none has nothing left to do.
    @exclusivity(unchecked) var eventCount = 0
    /// The client's first bytes were compared with the HTTP/2 preface (a stream's own exchange never is).
    @exclusivity(unchecked) var isProtocolDecided: Bool
    /// The client spoke HTTP/2: this connection only owns the stream and its accounting from then on.
    @exclusivity(unchecked) var http2: HTTP2Connection?
    /// This connection serves one stream of an HTTP/2 connection (`HTTP2StreamExchange`): its stream
    /// is a detached one, which that stream fills and empties, and which it tells when to look.
    let servesHTTP2Stream: Bool
    /// The HTTP/2 stream this connection serves. Not counted: the stream holds this connection, and
    /// sets this to nil when it goes (`HTTP2StreamExchange.deinit`). A weak reference gave every
    /// stream a side table, and every retain and release of it the slow path.
    unowned(unsafe) var http2Stream: HTTP2StreamExchange?
    /// For an HTTP/2 stream's exchange, who is at the other end of the client's connection (its
    /// detached stream has no peer), taken when the stream starts. Not a reference to that
    /// connection: the exchange may log after it went, and a weak one gave it a side table, which
    /// sent every retain and release of it down the slow path (4% of an HTTP/2 request's CPU).
    private let http2Client: AuditLogBuffer.Client?
    /// Who is at the other end, for the audit log: asked of the kernel at the first audit line (of
    /// the client's connection, for an HTTP/2 stream's exchange).
    lazy var auditClient: AuditLogBuffer.Client =
        self.http2Client
        ?? AuditLogBuffer.Client(socket: self.stream.socketDescriptor, isUnix: self.machine.isFromUnixSocket)

    /// Pending writes above this stop reading from the other side.
    static let highWatermark = 256 * 1024
    /// Bytes read ahead from the client (pipelined requests, a body that cannot be forwarded yet)
    /// above this stop reading from it.
    static let readAheadLimit = 64 * 1024

    var runtime: ProxyRuntime { self.context.runtime }
    /// `context.loop`, stored: read through the context, every `self.loop.now` retained and released it.
    let loop: EventLoop

    /// `listenerSession`: accepted on that session's own listener. `http2Client`: this connection
    /// serves one of that connection's HTTP/2 streams.
    init(
        stream: StreamConnection,
        context: LoopContext,
        isFromUnixSocket: Bool,
        listenerSession: NamedSession? = nil,
        servingHTTP2StreamOf http2Client: ClientConnection? = nil
    ) {
        let runtime = context.runtime
        self.stream = stream
        self.http2Client = http2Client?.auditClient
        self.servesHTTP2Stream = http2Client != nil
        self.isProtocolDecided = http2Client != nil
        self.context = context
        self.loop = context.loop
        self.parser = HTTPRequestParser(maximumHeadBytes: runtime.maxHeaderBytes)
        self.machine = ClientConnectionStateMachine(
            rules: runtime.connectionRules,
            isFromUnixSocket: isFromUnixSocket,
            listenerSession: listenerSession,
            now: context.loop.now
        )
    }

    func start() {
        self.context.clients[ObjectIdentifier(self)] = self
        // A detached stream has no events to start: its HTTP/2 stream calls `pump`.
        if !self.servesHTTP2Stream { self.stream.start(delegate: self) }
        self.armTimer()
    }

    // MARK: Entry points besides stream events

    /// Accepted beyond max_connections: answer 503 and close.
    func rejectOverCapacity() {
        self.run(self.machine.overCapacity())
        self.pump()
    }

    /// Shutting down: an idle connection closes now; a busy one closes once its response is out.
    func drain() {
        if let http2 = self.http2 { return http2.drain() }
        self.run(self.machine.drainRequested(hasPendingWrites: self.stream.pendingWriteBytes > 0))
        self.pump()
    }

    /// Stopping at once: the connection and everything it holds is closed.
    func closeNow() {
        self.http2?.closeStreams()
        self.run(self.machine.clientClosed())
    }

    // MARK: The pump

    /// Parses and forwards whatever the state allows now, from both sides, then settles reading,
    /// flushing and the timer. Re-entered (a callback during an action), it only asks for another pass.
    func pump() {
        if let http2 = self.http2 { return http2.pump() }
        if self.isPumping {
            self.needsAnotherPass = true
            return
        }
        self.isPumping = true
        var passes = 0
        repeat {
            // The end of an exchange on the upstream side lets the client side parse the next request.
            self.needsAnotherPass = false
            let before = self.eventCount
            self.processClientInput()
            self.processUpstreamInput()
            if self.eventCount != before { self.needsAnotherPass = true }
            passes += 1
        } while self.needsAnotherPass && !self.machine.isClosed && passes < 16
        self.isPumping = false
        if let http2 = self.http2 { return http2.pump() }
        if self.needsAnotherPass && !self.machine.isClosed {
            // Still work to do after many passes: finish it on this loop turn's end, letting other
            // connections run first.
            self.loop.defer { self.pump() }
        }
        self.settle()
        // Last: the HTTP/2 stream may take the answer and end this connection.
        if self.servesHTTP2Stream { self.http2Stream?.exchangeProgressed() }
    }

    /// Flushes both sides, then settles reading and the timer.
    private func settle() {
        guard !self.machine.isClosed else { return }
        self.stream.flush()
        self.upstream?.stream.flush()
        guard !self.machine.isClosed else { return }
        self.updateReading()
        self.armTimer()
    }

    /// Reading a side pauses while its bytes have nowhere to go: the other side's writes are backed
    /// up, or (for the client) too much is buffered that cannot be used yet, or the client is not
    /// reading the answers to requests it keeps sending.
    private func updateReading() {
        let clientBackedUp = self.stream.pendingWriteBytes > Self.highWatermark
        let clientReadable = self.stream.inbound.readableBytes < self.clientReadAhead && !clientBackedUp
        // The stream itself held, once, not through an optional: each call through `self.upstream`
        // (or on an optional local) retained and released the stream around it.
        guard let upstreamStream = self.upstream?.stream else {
            self.stream.setReading(clientReadable)
            return
        }
        self.stream.setReading(clientReadable && upstreamStream.pendingWriteBytes <= Self.highWatermark)
        upstreamStream.setReading(self.machine.upstreamInput != .none && !clientBackedUp)
    }

    /// How much of the client's bytes may wait unparsed. While a head is incomplete, enough for the
    /// parser's verdict: stopping short of `max_header_bytes` would leave a head with no line end in
    /// reach waiting for bytes nobody reads, answered 408 instead of 431.
    private var clientReadAhead: Int {
        guard self.machine.clientInput == .head else { return Self.readAheadLimit }
        return max(Self.readAheadLimit, self.parser.headVerdictBytes)
    }

    // MARK: The timer

    /// Keeps one timer at or before the machine's deadline (the HTTP/2 connection's, once the client
    /// spoke HTTP/2). Moving a deadline later costs nothing (keep-alive traffic does it on every
    /// request); the timer fires, finds the deadline later, and is armed again. (Timers hold the
    /// connection strongly; closing cancels them.)
    func armTimer() {
        guard let deadline = self.http2 == nil ? self.machine.deadline : self.http2!.deadline,
            !self.timer.serves(deadline)
        else { return }
        self.timer.arm(at: deadline, on: self.loop) { self.timerFired() }
    }

    private func timerFired() {
        self.timer.fired()
        if let http2 = self.http2 { return http2.timerFired(now: self.loop.now) }
        self.run(self.machine.timerFired(now: self.loop.now))
        self.pump()
    }

    func cancelTimer() {
        self.timer.cancel(on: self.loop)
    }
}

// MARK: Client stream events

extension ClientConnection: StreamConnectionDelegate {
    func streamReceived(_ connection: StreamConnection) {
        self.pump()
    }

    func streamReadEnded(_ connection: StreamConnection) {
        // Reported to the machine once the requests before the end are parsed (`pump`).
        self.pump()
    }

    func streamWritable(_ connection: StreamConnection) {
        self.pump()
    }

    /// The client's TLS inside an intercepted tunnel completed its handshake: HTTP/2 when ALPN
    /// selected `h2` (offered only with http2 = on), its streams going to the tunnel's host.
    func streamConnected(_ connection: StreamConnection) {
        self.run(self.machine.tlsEstablished(now: self.loop.now))
        if !self.machine.isClosed && self.stream.tls?.negotiatedProtocol == "h2" { self.startHTTP2() }
        self.pump()
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        self.http2?.closeStreams()
        if let error { self.runtime.logger.debug("client connection failed", ["error": error.description]) }
        self.run(self.machine.clientClosed(tlsFailure: error?.tlsFailure))
    }
}

// MARK: Upstream events

extension ClientConnection: UpstreamConnectionOwner {
    func upstreamReceived(_ upstream: UpstreamConnection) {
        self.pump()
    }

    func upstreamReadEnded(_ upstream: UpstreamConnection) {
        self.pump()
    }

    func upstreamWritable(_ upstream: UpstreamConnection) {
        self.pump()
    }

    func upstreamClosed(_ upstream: UpstreamConnection, error: IOError?) {
        precondition(upstream === self.upstream, "events of an upstream connection this one no longer holds")
        let endsResponse = upstream.parser.canEndAtEndOfInput
        let sentNothing = upstream.stream.bytesSent == self.upstreamBytesSentBeforeRequest
        self.upstream = nil
        upstream.close()
        self.run(
            self.machine.upstreamEnded(
                endsResponse: endsResponse && error == nil,
                sentNothing: sentNothing,
                reset: error != nil,
                tlsFailure: error.flatMap { $0.isTLSFailure ? $0.reason : nil },
                now: self.loop.now
            )
        )
        self.pump()
    }
}

// MARK: The token session

extension ClientConnection: TokenWaiter {
    func tokenReady(_ ticket: Ticket, _ answer: TokenAnswer) {
        self.run(self.machine.tokenReady(ticket, answer, now: self.loop.now))
        self.pump()
    }
}

@available(*, unavailable)
extension ClientConnection: Sendable {}
