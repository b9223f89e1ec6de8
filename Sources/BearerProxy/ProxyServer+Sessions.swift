import BearerConfig
import BearerCore
import BearerIO
import BearerSession

/// Making each session of a starting proxy: its token source, its fleet store, its token session.
extension ProxyServer {
    /// `session` made ready to run: its token calls go through `endpoints` (which present the
    /// session's own client certificate) from `loop`, which also runs its timer. With named sessions
    /// its log lines say `session=NAME`.
    static func makeSession(
        _ session: SessionConfiguration,
        index: Int,
        namesSessions: Bool,
        store: RefreshTokenStore?,
        endpoints connector: OutboundConnector,
        sessionStoreConnector: OutboundConnector,
        loop: EventLoop,
        blockingWork: BlockingWorkPool,
        logger: Logger
    ) -> NamedSession {
        let configuration = session.configuration
        let logger = namesSessions ? logger.with("session", session.name) : logger
        let supplies = TokenSupplyMaker(loop: loop, endpoints: connector, blockingWork: blockingWork, logger: logger)
        let sessionStore = configuration.sessionStore.endpoint.map { endpoint in
            SessionStore(
                endpoint: endpoint,
                name: configuration.sessionStore.name,
                lockTimeout: configuration.refreshTimeout,
                commandTimeout: configuration.upstreamConnectTimeout,
                loop: loop,
                connector: sessionStoreConnector,
                logger: logger
            )
        }
        let tokens = TokenSession(
            configuration: configuration,
            supply: supplies.supply(configuration, store: store),
            sessionStore: sessionStore,
            logger: logger,
            clock: loop.clock,
            timers: loop,
            blockingWork: blockingWork
        )
        return NamedSession(
            name: session.name,
            index: index,
            tokens: tokens,
            configuration: configuration,
            supplies: supplies
        )
    }
}

/// Makes a session's token supply from its configuration: at start, and again each time SIGHUP
/// re-reads the config. What it is made with lasts as long as the process: the loop its token calls
/// start from and the connector that reaches its endpoints (TLS settings need a restart).
struct TokenSupplyMaker: Sendable {
    let loop: EventLoop
    let endpoints: OutboundConnector
    /// Where the token sources' blocking work runs (file locks, token_command).
    let blockingWork: BlockingWorkPool
    let logger: Logger

    func supply(_ configuration: Configuration, store: RefreshTokenStore?) -> TokenSupply {
        let caller = EndpointCaller(configuration: configuration, loop: self.loop, connector: self.endpoints)
        return TokenSupply(
            configuration: configuration,
            source: Self.source(
                configuration,
                store: store,
                endpoints: caller,
                pool: self.blockingWork,
                logger: self.logger
            ),
            store: store,
            revocation: TokenRevocation(configuration: configuration, client: caller)
        )
    }

    static func source(
        _ configuration: Configuration,
        store: RefreshTokenStore?,
        endpoints: EndpointCaller,
        pool: BlockingWorkPool = .shared,
        logger: Logger
    ) -> TokenSource? {
        if configuration.tokenFormat == .json && configuration.canRefresh {
            return JSONTokenSource(
                configuration: configuration,
                store: store,
                client: endpoints,
                logger: logger,
                pool: pool
            )
        }
        if let url = configuration.tokenURL {
            return OAuth2TokenSource(
                configuration: configuration,
                url: url,
                store: store,
                client: endpoints,
                logger: logger,
                pool: pool
            )
        }
        if let argv = configuration.tokenCommand {
            return CommandTokenSource(argv: argv, timeout: configuration.refreshTimeout, pool: pool)
        }
        return nil
    }
}
