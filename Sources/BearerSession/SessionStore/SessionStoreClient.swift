import BearerConfig
import BearerCore
import BearerIO

/// Runs the fleet protocol on one event loop: performs what `SessionStoreStateMachine` decides,
/// over a command connection and a subscribing connection to Redis. Confined to its loop.
final class SessionStoreClient: RedisConnectionObserver {
    private let endpoint: RedisEndpoint
    private let commands: SessionStoreCommands
    private let fallback: SessionStoreFallback
    /// Unowned and unchecked: the client runs on this loop, which outlives it.
    private unowned(unsafe) let loop: EventLoop
    private let connection: RedisConnection
    private let subscriber: RedisConnection
    private let logger: Logger
    private let wallClock: @Sendable () -> Int64
    private let status: Locked<SessionStoreStatus>
    private var machine: SessionStoreStateMachine
    private var adopt: (@Sendable (StoredSession) -> Void)?
    /// Whoever waits for the running refresh, and how it fetches.
    private var waiting: [@Sendable (SessionStore.RefreshResult) -> Void] = []
    private var fetch: SessionStore.Fetch?
    private var failedFetch: TokenFetchOutcome?
    private var retryTimer: TimerID?
    private var pollTimer: TimerID?
    private var isStopped = false

    /// How often the store is read while no subscription tells of new tokens.
    static let pollInterval: Duration = .seconds(1)

    init(
        endpoint: RedisEndpoint,
        commands: SessionStoreCommands,
        fallback: SessionStoreFallback,
        commandTimeout: Duration,
        loop: EventLoop,
        connector: OutboundConnector,
        logger: Logger,
        wallClock: @escaping @Sendable () -> Int64,
        status: Locked<SessionStoreStatus>
    ) {
        self.endpoint = endpoint
        self.commands = commands
        self.fallback = fallback
        self.loop = loop
        self.logger = logger
        self.wallClock = wallClock
        self.status = status
        self.machine = SessionStoreStateMachine(settings: .init(waitLimit: commands.lockTimeout * 2))
        self.connection = RedisConnection(
            endpoint: endpoint,
            loop: loop,
            connector: connector,
            commandTimeout: commandTimeout
        )
        self.subscriber = RedisConnection(
            endpoint: endpoint,
            subscribeTo: commands.channel,
            loop: loop,
            connector: connector,
            commandTimeout: commandTimeout
        )
    }

    func start(adopt: @escaping @Sendable (StoredSession) -> Void) {
        self.loop.assertInEventLoop()
        self.adopt = adopt
        self.connection.observer = self
        self.subscriber.observer = self
        self.connection.start()
        self.subscriber.start()
        self.schedulePoll()
    }

    func stop() {
        self.loop.assertInEventLoop()
        self.isStopped = true
        for timer in [self.retryTimer, self.pollTimer].compactMap({ $0 }) { self.loop.cancel(timer) }
        self.retryTimer = nil
        self.pollTimer = nil
        // Waiters first: the commands the connection fails next must not end their refresh otherwise.
        self.finishWaiting(.stopped)
        self.connection.stop()
        self.subscriber.stop()
    }

    func refresh(
        replacing: Secret<String>?,
        fetch: @escaping SessionStore.Fetch,
        completion: @escaping @Sendable (SessionStore.RefreshResult) -> Void
    ) {
        self.loop.assertInEventLoop()
        guard !self.isStopped else {
            completion(.stopped)
            return
        }
        // A request while a refresh runs joins it (the machine answers nothing); the fetches are alike,
        // every one is this store's token session's.
        self.waiting.append(completion)
        self.fetch = fetch
        self.perform(
            self.machine.refreshRequested(lockValue: Self.lockValue(), replacing: replacing, now: self.loop.now)
        )
    }

    func refreshedLocally(_ token: StoredSession) {
        self.machine.refreshedLocally(token)
    }

    // MARK: Performing actions

    private func perform(_ action: SessionStoreStateMachine.Action) {
        switch action {
        case .none:
            break
        case .lockAndRead(let lockValue):
            self.lockAndRead(lockValue)
        case .read:
            self.read()
        case .fetch(let refreshToken):
            self.runFetch(refreshToken)
        case .write(let token, let base, let purpose):
            self.write(token, base: base, purpose: purpose)
        case .finish(let outcome, let releasing, let isNewOutage):
            if let releasing { self.run("release", self.commands.release(releasing)) { _ in } }
            self.finish(outcome, isNewOutage: isNewOutage)
        case .adopt(let stored):
            self.logger.info(
                "adopted the token another proxy stored",
                [
                    "store": self.endpoint.description, "session": self.commands.sessionKey,
                    "store_generation": "\(stored.generation)",
                ]
            )
            self.adopt?(stored)
        case .retry(let delay):
            self.retryTimer = self.loop.schedule(after: delay) { [weak self] in
                guard let self else { return }
                self.retryTimer = nil
                self.perform(self.machine.retryDue(now: self.loop.now))
            }
        }
        self.noteGeneration()
    }

    private func lockAndRead(_ lockValue: String) {
        var acquired: Result<Bool, RedisError> = .failure(.stopped)
        var timeLeft: Duration?
        self.run("lock", self.commands.lock(lockValue)) { result in acquired = result.map { !$0.isNull } }
        self.run("read", self.commands.lockTimeLeft()) { result in
            if case .success(let value) = result, let milliseconds = value.integer, milliseconds > 0 {
                timeLeft = .milliseconds(milliseconds)
            }
        }
        self.run("read", self.commands.read()) { result in
            switch (acquired, result.flatMap(StoredSession.decode)) {
            case (.success(let isAcquired), .success(let stored)):
                self.perform(
                    self.machine.lockAnswered(
                        acquired: isAcquired,
                        lockTimeLeft: timeLeft,
                        stored: stored,
                        wallMilliseconds: self.wallClock()
                    )
                )
            case (.failure(let error), _), (_, .failure(let error)):
                self.perform(self.machine.storeFailed(error))
            }
        }
    }

    private func read() {
        self.run("read", self.commands.read()) { result in
            switch result.flatMap(StoredSession.decode) {
            case .success(let stored):
                self.perform(self.machine.readAnswered(stored, wallMilliseconds: self.wallClock()))
            case .failure(let error):
                self.perform(self.machine.readFailed(error))
            }
        }
    }

    private func runFetch(_ refreshToken: Secret<String>?) {
        guard let fetch = self.fetch else { preconditionFailure("a refresh without a fetch") }
        let loop = self.loop
        let this = UnsafeTransfer(self)
        fetch(refreshToken) { outcome in
            loop.execute {
                let client = this.value
                guard !client.isStopped else { return }
                var token: StoredSession?
                if case .token(let fetched) = outcome {
                    token = StoredSession(fetched: fetched, wallMilliseconds: client.wallClock())
                } else {
                    client.failedFetch = outcome
                }
                client.perform(client.machine.fetchAnswered(token))
            }
        }
    }

    private func write(_ token: StoredSession, base: Int, purpose: SessionStoreStateMachine.WritePurpose) {
        let lockValue: String?
        switch purpose {
        case .refresh(let value): lockValue = value
        case .reconcile: lockValue = nil
        }
        self.run("write", self.commands.write(token, base: base, lockValue: lockValue)) { result in
            switch (purpose, result.flatMap(SessionStoreCommands.decodeWrite)) {
            case (.refresh, .success(let answer)):
                self.perform(self.machine.writeAnswered(written: answer.written, generation: answer.generation))
            case (.reconcile, .success(let answer)):
                self.perform(self.machine.reconcileAnswered(written: answer.written, generation: answer.generation))
            case (.refresh, .failure(let error)):
                self.perform(self.machine.storeFailed(error))
            case (.reconcile, .failure):
                self.machine.reconcileFailed()
            }
        }
    }

    /// Sends `command`, counting it (and its failure) under `operation` for `/metrics`.
    private func run(
        _ operation: String,
        _ command: RESPCommand,
        _ completion: @escaping (Result<RESPValue, RedisError>) -> Void
    ) {
        self.status.withLock { $0.operations[operation, default: 0] += 1 }
        self.connection.send(command) { result in
            if case .failure(let error) = result {
                self.status.withLock {
                    $0.errors[operation, default: 0] += 1
                    $0.lastError = error.reason
                }
            }
            completion(result)
        }
    }

    private func finish(_ outcome: SessionStoreStateMachine.Outcome, isNewOutage: Bool) {
        guard !self.isStopped else {
            self.finishWaiting(.stopped)
            return
        }
        let result: SessionStore.RefreshResult
        switch outcome {
        case .adopted(let stored):
            result = .adopted(stored)
        case .refreshed(let stored):
            result = .refreshed(stored, isStored: true)
        case .refreshedUnsynced(let stored):
            result = .refreshed(stored, isStored: false)
        case .fetchFailed:
            result = .fetchFailed(
                self.failedFetch ?? .transient(reason: "the token call ended without an answer", timedOut: false)
            )
        case .storeUnavailable(let error):
            self.fallBack(
                reason: "session store \(self.endpoint.description): \(error.reason)",
                isNewOutage: isNewOutage
            )
            return
        case .lockWaitTimedOut:
            self.fallBack(
                reason: "session store \(self.endpoint.description): another proxy held the refresh lock for too long",
                isNewOutage: isNewOutage
            )
            return
        }
        self.finishWaiting(result)
    }

    /// The fleet could not be coordinated: session_store_fallback says whether this proxy refreshes on
    /// its own (`local`: its token is stored once the store is back) or the refresh fails (`fail`).
    private func fallBack(reason: String, isNewOutage: Bool) {
        guard case .local = self.fallback, let fetch = self.fetch else {
            let failure = TokenFetchOutcome.transient(
                reason: "\(reason) (session_store_fallback = fail)",
                timedOut: false
            )
            self.finishWaiting(.fetchFailed(failure))
            return
        }
        if isNewOutage {
            self.logger.warn(
                "session store unreachable; refreshing in this process (session_store_fallback = local)",
                ["reason": reason]
            )
        }
        let waiting = self.waiting
        self.finishWaiting(nil)
        let this = UnsafeTransfer(self)
        let loop = self.loop
        let wallClock = self.wallClock
        fetch(nil) { outcome in
            loop.execute {
                if case .token(let fetched) = outcome {
                    this.value.machine.refreshedLocally(StoredSession(fetched: fetched, wallMilliseconds: wallClock()))
                }
                for completion in waiting { completion(.fetchedAlone(outcome)) }
            }
        }
    }

    /// Ends the running refresh; its waiters hear `result` (nil: the caller tells them).
    private func finishWaiting(_ result: SessionStore.RefreshResult?) {
        let waiting = self.waiting
        self.waiting.removeAll()
        self.fetch = nil
        self.failedFetch = nil
        if let timer = self.retryTimer { self.loop.cancel(timer) }
        self.retryTimer = nil
        guard let result else { return }
        for completion in waiting { completion(result) }
    }

    private func schedulePoll() {
        self.pollTimer = self.loop.schedule(after: Self.pollInterval) { [weak self] in
            guard let self, !self.isStopped else { return }
            self.perform(self.machine.pollDue())
            self.schedulePoll()
        }
    }

    private func noteGeneration() {
        let generation = self.machine.lastSeenGeneration
        self.status.withLock { $0.generation = generation }
    }

    // MARK: RedisConnectionObserver

    func redisConnectionReady(_ connection: RedisConnection) {
        if connection === self.subscriber {
            self.status.withLock { $0.isSubscribed = true }
            self.perform(self.machine.subscriptionChanged(isUp: true))
            return
        }
        let wasDown = self.status.withLock { status -> Bool in
            defer { status.state = "connected" }
            return status.state == "unreachable"
        }
        if wasDown {
            self.logger.info("session store reachable again", ["store": self.endpoint.description])
        } else {
            self.logger.debug("session store connected", ["store": self.endpoint.description])
        }
        self.perform(self.machine.storeConnected())
    }

    func redisConnectionDown(_ connection: RedisConnection, error: RedisError) {
        if connection === self.subscriber {
            self.status.withLock { $0.isSubscribed = false }
            self.perform(self.machine.subscriptionChanged(isUp: false))
            return
        }
        self.status.withLock {
            $0.state = "unreachable"
            $0.lastError = error.reason
        }
        self.logger.warn(
            "session store unreachable; retrying in the background",
            ["store": self.endpoint.description, "error": error.reason]
        )
    }

    func redisMessage(_ connection: RedisConnection, channel: [UInt8], payload: [UInt8]) {
        guard let generation = Int(String(decoding: payload, as: UTF8.self)) else { return }
        self.perform(self.machine.published(generation: generation))
    }

    // MARK: Values

    /// 128 random bits: only the holder can know its lock's value, so only it can release it.
    static func lockValue() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }
}

@available(*, unavailable)
extension SessionStoreClient: Sendable {}
