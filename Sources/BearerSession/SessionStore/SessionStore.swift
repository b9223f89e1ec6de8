import BearerConfig
import BearerCore
import BearerIO

/// The fleet's shared session, as the token session sees it: one refresh for every proxy, tokens
/// stored by others adopted, and how the store is doing for `/status` and `/metrics`.
///
/// Safe from any thread: every call hops to the store's event loop, where `SessionStoreClient`
/// runs the fleet protocol. Callbacks run on that loop.
package final class SessionStore: Sendable {
    /// Performs one token call with `refreshToken` (nil: the token session's own). The outcome's
    /// refresh token must be the one to keep: the rotated one, else the one spent.
    package typealias Fetch =
        @Sendable (
            _ refreshToken: Secret<String>?,
            _ completion: @escaping @Sendable (TokenFetchOutcome) -> Void
        ) -> Void

    /// How a refresh through the store ended.
    package enum RefreshResult: Sendable {
        /// Another proxy's token; no token call was made here.
        case adopted(StoredSession)
        /// This proxy's token call; `isStored` is false when the store could not take it (yet).
        case refreshed(StoredSession, isStored: Bool)
        /// This proxy's token call failed; or the fleet could not be coordinated (the store unreachable,
        /// its lock held too long) and session_store_fallback = fail made that a failure.
        case fetchFailed(TokenFetchOutcome)
        /// The fleet could not be coordinated and session_store_fallback = local: this proxy made the
        /// token call on its own; a token it got is stored once the store is back.
        case fetchedAlone(TokenFetchOutcome)
        /// The proxy is stopping: nothing more is to be done (above all, no token call of its own,
        /// which would spend the fleet's refresh token without storing what it got).
        case stopped
    }

    package let endpoint: RedisEndpoint
    package let name: String
    private let loop: EventLoop
    private let client: UnsafeTransfer<SessionStoreClient>
    private let statusBox: Locked<SessionStoreStatus>

    /// `lockTimeout` is refresh_timeout: how long a dead holder's lock keeps the others waiting.
    /// `fallback`: what a refresh does when the fleet cannot be coordinated.
    package init(
        endpoint: RedisEndpoint,
        name: String,
        fallback: SessionStoreFallback = .local,
        lockTimeout: Duration,
        commandTimeout: Duration,
        loop: EventLoop,
        connector: OutboundConnector,
        logger: Logger,
        wallClock: @escaping @Sendable () -> Int64 = wallClockMilliseconds
    ) {
        self.endpoint = endpoint
        self.name = name
        self.loop = loop
        let status = Locked(SessionStoreStatus(store: endpoint.description, name: name))
        self.statusBox = status
        self.client = UnsafeTransfer(
            SessionStoreClient(
                endpoint: endpoint,
                commands: SessionStoreCommands(name: name, lockTimeout: lockTimeout),
                fallback: fallback,
                commandTimeout: commandTimeout,
                loop: loop,
                connector: connector,
                logger: logger,
                wallClock: wallClock,
                status: status
            )
        )
    }

    /// Connects and reads the store; `adopt` hears of every token another proxy stores from now on
    /// (outside refreshes this proxy asked for).
    package func start(adopt: @escaping @Sendable (StoredSession) -> Void) {
        let client = self.client
        self.loop.execute { client.value.start(adopt: adopt) }
    }

    package func stop() {
        let client = self.client
        self.loop.execute { client.value.stop() }
    }

    /// One refresh for the fleet, to replace `replacing` (the token the session holds; nil: none):
    /// `fetch` runs only when this proxy holds the lock and the store has no other usable token. A
    /// call while one runs joins it.
    package func refresh(
        replacing: Secret<String>?,
        fetch: @escaping Fetch,
        completion: @escaping @Sendable (RefreshResult) -> Void
    ) {
        let client = self.client
        self.loop.execute { client.value.refresh(replacing: replacing, fetch: fetch, completion: completion) }
    }

    /// This proxy got `token` on its own while the store was unreachable: store it once it is back.
    package func refreshedLocally(_ token: StoredSession) {
        let client = self.client
        self.loop.execute { client.value.refreshedLocally(token) }
    }

    /// What `/status` and `/metrics` show: never a token or the password.
    package var status: SessionStoreStatus { self.statusBox.withLock { $0 } }
}
