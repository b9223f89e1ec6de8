import BearerConfig
import BearerCore
import BearerIO

/// What a Redis connection tells its owner, on the connection's loop.
protocol RedisConnectionObserver: AnyObject {
    /// Logged in (after a first connect or a reconnect): commands go out now.
    func redisConnectionReady(_ connection: RedisConnection)
    /// The connection was ready and is lost (or a first attempt failed); it reconnects by itself.
    func redisConnectionDown(_ connection: RedisConnection, error: RedisError)
    /// A pub/sub message (subscribing connections only).
    func redisMessage(_ connection: RedisConnection, channel: [UInt8], payload: [UInt8])
}

/// One connection to Redis on an event loop: non-blocking, pipelined, logging in with AUTH and
/// SELECT, over TLS for `rediss://`, and reconnecting with backoff when it breaks.
///
/// The decisions are `RedisConnectionStateMachine`'s; this class performs them. Connections come
/// from the `OutboundConnector`, so a `rediss://` store is never sent a byte (a password) in clear
/// text. Confined to its loop: every method must be called there.
final class RedisConnection: StreamConnectionDelegate {
    typealias Completion = (Result<RESPValue, RedisError>) -> Void

    let endpoint: RedisEndpoint
    /// Unowned and unchecked: the connection runs on this loop, which outlives it.
    private unowned(unsafe) let loop: EventLoop
    private let connector: OutboundConnector
    private var machine: RedisConnectionStateMachine
    private var parser = RESPParser()
    private var completions: [RedisConnectionStateMachine.CommandID: Completion] = [:]
    private var nextID: RedisConnectionStateMachine.CommandID = 1
    private var attempt: ConnectAttempt?
    private var stream: StreamConnection?
    private var deadlineTimer = DeadlineTimer()
    private var reconnectTimer: TimerID?
    /// Down is reported once per outage: when a ready connection breaks, or the first attempt fails.
    private var hasReportedDown = false
    weak var observer: RedisConnectionObserver?

    /// How long a ready connection stays silent before it sends a PING: well under the idle
    /// timeouts of NATs and cloud load balancers (60 s and up), at one small command per half minute.
    static let keepaliveInterval: Duration = .seconds(30)

    /// A connection for commands, or (`subscribeTo`) one that subscribes to a channel and only
    /// receives its messages (RESP2 pub/sub takes the whole connection).
    init(
        endpoint: RedisEndpoint,
        subscribeTo channel: String? = nil,
        loop: EventLoop,
        connector: OutboundConnector,
        commandTimeout: Duration,
        keepaliveInterval: Duration? = RedisConnection.keepaliveInterval
    ) {
        self.endpoint = endpoint
        self.loop = loop
        self.connector = connector
        var handshake = endpoint.handshake
        if let channel { handshake.append(RESPCommand("SUBSCRIBE", channel)) }
        self.machine = RedisConnectionStateMachine(
            settings: .init(
                handshake: handshake,
                isSubscriber: channel != nil,
                commandTimeout: commandTimeout,
                keepaliveInterval: keepaliveInterval
            )
        )
    }

    func start() {
        self.loop.assertInEventLoop()
        self.perform(self.machine.started())
    }

    /// Closes the connection for good; commands not answered yet fail with `.stopped`.
    func stop() {
        self.loop.assertInEventLoop()
        self.perform(self.machine.stopped())
    }

    /// Sends `command`; `completion` runs on the loop with its reply, or why there is none.
    func send(_ command: RESPCommand, _ completion: @escaping Completion) {
        self.loop.assertInEventLoop()
        let id = self.nextID
        self.nextID += 1
        self.completions[id] = completion
        self.perform(self.machine.commandRequested(id, command, now: self.loop.now))
    }

    // MARK: Performing actions

    private func perform(_ action: RedisConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .connect:
            self.connect()
        case .write(let commands):
            self.write(commands)
        case .becomeReady(let commands):
            self.hasReportedDown = false
            self.write(commands)
            self.observer?.redisConnectionReady(self)
        case .complete(let id, let result):
            self.completions.removeValue(forKey: id)?(result)
        case .fail(let ids, let error):
            for id in ids { self.completions.removeValue(forKey: id)?(.failure(error)) }
        case .deliver(let channel, let payload):
            self.observer?.redisMessage(self, channel: channel, payload: payload)
        case .reconnect(let ids, let error, let delay, let wasReady):
            self.closeStream()
            self.reconnectTimer = self.loop.schedule(after: delay) { [weak self] in
                guard let self else { return }
                self.reconnectTimer = nil
                self.perform(self.machine.reconnectDue())
            }
            for id in ids { self.completions.removeValue(forKey: id)?(.failure(error)) }
            if wasReady || !self.hasReportedDown {
                self.hasReportedDown = true
                self.observer?.redisConnectionDown(self, error: error)
            }
        case .close(let ids):
            self.closeStream()
            if let timer = self.reconnectTimer { self.loop.cancel(timer) }
            self.reconnectTimer = nil
            self.deadlineTimer.cancel(on: self.loop)
            for id in ids { self.completions.removeValue(forKey: id)?(.failure(.stopped)) }
        }
        self.armDeadlineTimer()
    }

    private func connect() {
        self.attempt = self.connector.connect(
            host: self.endpoint.host,
            port: self.endpoint.port,
            usesTLS: self.endpoint.usesTLS,
            on: self.loop
        ) { [weak self] result in
            guard let self else {
                if case .success(let stream) = result { stream.close() }
                return
            }
            self.attempt = nil
            switch result {
            case .success(let stream):
                self.stream = stream
                stream.delegate = self
                self.parser = RESPParser()
                self.perform(self.machine.connected(now: self.loop.now))
            case .failure(let error):
                self.perform(self.machine.connectFailed(.connect(error)))
            }
        }
    }

    private func write(_ commands: [RESPCommand]) {
        guard let stream = self.stream, !commands.isEmpty else { return }
        stream.withOutbound { buffer in
            for command in commands { command.encode(into: &buffer) }
        }
        stream.flush()
    }

    private func closeStream() {
        self.attempt?.cancel()
        self.attempt = nil
        self.stream?.close()
        self.stream = nil
    }

    /// Keeps one timer at or before the machine's next deadline (a reply overdue, or a keepalive due).
    private func armDeadlineTimer() {
        guard let deadline = self.machine.nextDeadline else { return }
        self.deadlineTimer.arm(at: deadline, on: self.loop) { [weak self] in
            guard let self else { return }
            self.deadlineTimer.fired()
            self.perform(self.machine.deadlinePassed(now: self.loop.now))
        }
    }

    // MARK: StreamConnectionDelegate

    func streamReceived(_ connection: StreamConnection) {
        while connection === self.stream {
            let event: RESPParser.Event
            do throws(RESPParseError) {
                event = try connection.inbound.parseNext { raw throws(RESPParseError) in try self.parser.next(raw) }
            } catch {
                self.perform(self.machine.receivedGarbage(error))
                return
            }
            switch event {
            case .value(let value, _):
                self.perform(self.machine.received(value, now: self.loop.now))
            case .needMore:
                return
            }
        }
    }

    func streamReadEnded(_ connection: StreamConnection) {
        guard connection === self.stream else { return }
        self.perform(self.machine.connectionClosed("closed by the server"))
    }

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        guard connection === self.stream else { return }
        self.stream = nil
        self.perform(self.machine.connectionClosed(error?.reason ?? "closed"))
    }

    func streamConnected(_ connection: StreamConnection) {}
    func streamWritable(_ connection: StreamConnection) {}
}

@available(*, unavailable)
extension RedisConnection: Sendable {}
