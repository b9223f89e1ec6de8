import BearerCore

/// The life of one connection to Redis: connect, log in, answer commands in order, reconnect.
///
/// A value type with no I/O and no clock of its own; `RedisConnection` performs what it returns.
/// RESP has no request IDs: replies come back in the order commands were written (pipelining), so
/// the commands in flight are a queue and each reply completes the oldest. The login steps (AUTH,
/// SELECT, and SUBSCRIBE for the subscribing connection) go first, and commands wait until they all
/// succeeded: a command that ran before SELECT would touch the wrong database.
///
/// A connection that has heard nothing for `keepaliveInterval` sends a PING. A connection that a
/// NAT or firewall dropped without a reset, or a hung server, is then found while nothing needs it.
/// Otherwise the subscriber would miss publications unnoticed, and the next refresh would wait a
/// whole command timeout, then run without the fleet.
struct RedisConnectionStateMachine {
    typealias CommandID = UInt64

    struct Settings {
        /// AUTH, SELECT, then SUBSCRIBE for a subscribing connection: one reply expected per command.
        var handshake: [RESPCommand]
        /// The connection only receives pub/sub messages once logged in.
        var isSubscriber: Bool
        /// An unanswered command older than this means the server is gone: reconnect.
        var commandTimeout: Duration
        /// Silence after which a ready connection sends a PING; nil: never.
        var keepaliveInterval: Duration? = nil
    }

    private enum Purpose: Equatable {
        case handshake(name: String)
        case caller(CommandID)
        /// Any reply, an error too, shows the server is there.
        case keepalive
    }

    private struct Sent {
        var purpose: Purpose
        var sentAt: Instant
    }

    enum State: Equatable {
        /// Not started. Valid transitions: .connecting, .stopped.
        case initial
        /// TCP (and TLS) being made. Valid transitions: .handshaking, .ready, .backingOff, .stopped.
        case connecting
        /// Login commands written, their replies awaited. Valid transitions: .ready, .backingOff, .stopped.
        case handshaking
        /// Commands go out as they come. Valid transitions: .backingOff, .stopped.
        case ready
        /// The last attempt failed; the next starts after a delay. Valid transitions: .connecting, .stopped.
        case backingOff(RedisError)
        case stopped
    }

    enum Action: Equatable {
        case none
        /// Start connecting.
        case connect
        /// Write these commands and flush.
        case write([RESPCommand])
        /// Logged in: tell the owner, then write the commands that waited.
        case becomeReady(write: [RESPCommand])
        case complete(CommandID, Result<RESPValue, RedisError>)
        case fail([CommandID], RedisError)
        /// A pub/sub message arrived on the subscribing connection.
        case deliver(channel: [UInt8], payload: [UInt8])
        /// Drop the connection (if any), fail these commands, and connect again after `delay`.
        /// `wasReady` says whether the owner saw the store as up until now.
        case reconnect(failing: [CommandID], RedisError, after: Duration, wasReady: Bool)
        /// Close for good; fail these commands.
        case close(failing: [CommandID])
    }

    let settings: Settings
    private(set) var state: State = .initial
    /// Consecutive failed attempts, for the backoff (`Backoff.standard`: a restarted Redis is found
    /// again within seconds, one that stays down costs an attempt every few); reset once logged in.
    private var failures = 0
    /// Commands asked for before the connection was ready.
    private var waiting: [(CommandID, RESPCommand)] = []
    /// Written and unanswered, oldest first (from `inFlightStart`).
    private var inFlight: [Sent] = []
    private var inFlightStart = 0
    /// When the server last said anything (or the connection became ready): the keepalive's clock.
    private var lastHeardAt: Instant?

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: Events

    mutating func started() -> Action {
        guard self.state == .initial else { return .none }
        self.state = .connecting
        return .connect
    }

    /// TCP (and TLS) is up.
    mutating func connected(now: Instant) -> Action {
        guard self.state == .connecting else { return .none }
        guard !self.settings.handshake.isEmpty else { return self.becomeReady(now: now) }
        self.state = .handshaking
        for command in self.settings.handshake {
            self.inFlight.append(Sent(purpose: .handshake(name: command.name), sentAt: now))
        }
        return .write(self.settings.handshake)
    }

    mutating func connectFailed(_ error: RedisError) -> Action {
        guard self.state == .connecting else { return .none }
        return self.dropConnection(error)
    }

    /// A caller wants `command` run; its reply comes back as `.complete(id, …)`.
    mutating func commandRequested(_ id: CommandID, _ command: RESPCommand, now: Instant) -> Action {
        precondition(!self.settings.isSubscriber, "Invalid command on a subscribing connection")
        switch self.state {
        case .initial, .connecting, .handshaking:
            self.waiting.append((id, command))
            return .none
        case .ready:
            self.inFlight.append(Sent(purpose: .caller(id), sentAt: now))
            return .write([command])
        case .backingOff(let error):
            return .fail([id], .unavailable(error.reason))
        case .stopped:
            return .fail([id], .stopped)
        }
    }

    /// One whole value arrived.
    mutating func received(_ value: RESPValue, now: Instant) -> Action {
        switch self.state {
        case .handshaking, .ready:
            break
        case .initial, .connecting, .backingOff, .stopped:
            return .none
        }
        self.lastHeardAt = now
        let isSubscribed = self.settings.isSubscriber && self.state == .ready
        // A message can arrive while a keepalive PING waits for its reply: it is not that reply.
        if isSubscribed, let message = Self.message(value) { return message }
        guard self.inFlightStart < self.inFlight.count else {
            // Other pub/sub replies (a late subscribe count) are ignored.
            if isSubscribed { return .none }
            return self.dropConnection(.malformed("a reply nothing asked for"))
        }
        let sent = self.inFlight[self.inFlightStart]
        self.inFlightStart += 1
        if self.inFlightStart == self.inFlight.count {
            self.inFlight.removeAll(keepingCapacity: true)
            self.inFlightStart = 0
        }
        switch sent.purpose {
        case .handshake(let name):
            if case .error(let message) = value {
                return self.dropConnection(.refused(command: name, message: message))
            }
            guard self.inFlightStart == self.inFlight.count else { return .none }
            return self.becomeReady(now: now)
        case .caller(let id):
            if case .error(let message) = value { return .complete(id, .failure(.reply(message))) }
            return .complete(id, .success(value))
        case .keepalive:
            return .none
        }
    }

    /// The bytes from Redis are not RESP.
    mutating func receivedGarbage(_ error: RESPParseError) -> Action {
        self.dropConnection(.malformed(error.message))
    }

    /// The connection closed or broke.
    mutating func connectionClosed(_ reason: String) -> Action {
        switch self.state {
        case .connecting, .handshaking, .ready:
            return self.dropConnection(.connectionLost(reason))
        case .initial, .backingOff, .stopped:
            return .none
        }
    }

    /// The reconnect delay is over.
    mutating func reconnectDue() -> Action {
        guard case .backingOff = self.state else { return .none }
        self.state = .connecting
        return .connect
    }

    /// The connection's timer fired: an answer overdue means the server is gone; a long silence
    /// calls for a PING.
    mutating func deadlinePassed(now: Instant) -> Action {
        guard let deadline = self.nextDeadline, now >= deadline else { return .none }
        if self.inFlightStart < self.inFlight.count {
            return self.dropConnection(.noReply(after: self.settings.commandTimeout))
        }
        self.inFlight.append(Sent(purpose: .keepalive, sentAt: now))
        return .write([RESPCommand("PING")])
    }

    /// When the oldest unanswered command is overdue, or else when the keepalive PING is due (the
    /// connection's timer).
    var nextDeadline: Instant? {
        if self.inFlightStart < self.inFlight.count {
            return self.inFlight[self.inFlightStart].sentAt + self.settings.commandTimeout
        }
        guard self.state == .ready, let interval = self.settings.keepaliveInterval, let heard = self.lastHeardAt
        else { return nil }
        return heard + interval
    }

    mutating func stopped() -> Action {
        guard self.state != .stopped else { return .none }
        let failing = self.takeAllCommands()
        self.state = .stopped
        return .close(failing: failing)
    }

    // MARK: Transitions

    private mutating func becomeReady(now: Instant) -> Action {
        self.state = .ready
        self.failures = 0
        self.lastHeardAt = now
        guard !self.settings.isSubscriber else { return .becomeReady(write: []) }
        let commands = self.waiting.map(\.1)
        for (id, _) in self.waiting { self.inFlight.append(Sent(purpose: .caller(id), sentAt: now)) }
        self.waiting.removeAll()
        return .becomeReady(write: commands)
    }

    private mutating func dropConnection(_ error: RedisError) -> Action {
        let wasReady = self.state == .ready
        let failing = self.takeAllCommands()
        self.failures += 1
        self.state = .backingOff(error)
        return .reconnect(
            failing: failing,
            error,
            after: Backoff.standard.delay(afterFailures: self.failures),
            wasReady: wasReady
        )
    }

    private mutating func takeAllCommands() -> [CommandID] {
        var ids: [CommandID] = []
        for sent in self.inFlight[self.inFlightStart...] {
            if case .caller(let id) = sent.purpose { ids.append(id) }
        }
        ids += self.waiting.map(\.0)
        self.inFlight.removeAll()
        self.inFlightStart = 0
        self.waiting.removeAll()
        return ids
    }

    /// `["message", channel, payload]` as a delivery; nil for anything else.
    private static func message(_ value: RESPValue) -> Action? {
        guard case .array(let items?) = value, items.count == 3, items[0].text == "message",
            case .bulkString(let channel?) = items[1], case .bulkString(let payload?) = items[2]
        else { return nil }
        return .deliver(channel: channel, payload: payload)
    }
}
