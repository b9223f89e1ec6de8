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
        logger: Logger
    ) -> NamedSession {
        let configuration = session.configuration
        let logger = namesSessions ? logger.with("session", session.name) : logger
        let supplies = TokenSupplyMaker(loop: loop, endpoints: connector, logger: logger)
        let sessionStore = configuration.sessionStore.endpoint.map { endpoint in
            SessionStore(
                endpoint: endpoint,
                name: configuration.sessionStore.name,
                fallback: configuration.sessionStore.fallback,
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
            timers: loop
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
    let logger: Logger

    func supply(_ configuration: Configuration, store: RefreshTokenStore?) -> TokenSupply {
        let caller = EndpointCaller(configuration: configuration, loop: self.loop, connector: self.endpoints)
        return TokenSupply(
            configuration: configuration,
            source: Self.source(configuration, store: store, endpoints: caller, logger: self.logger),
            store: store,
            revocation: TokenRevocation(configuration: configuration, client: caller)
        )
    }

    static func source(
        _ configuration: Configuration,
        store: RefreshTokenStore?,
        endpoints: EndpointCaller,
        logger: Logger
    ) -> TokenSource? {
        if configuration.tokenFormat == .json && configuration.canRefresh {
            return JSONTokenSource(configuration: configuration, store: store, client: endpoints, logger: logger)
        }
        if let url = configuration.tokenURL {
            return OAuth2TokenSource(
                configuration: configuration,
                url: url,
                store: store,
                client: endpoints,
                logger: logger
            )
        }
        if let argv = configuration.tokenCommand {
            return CommandTokenSource(argv: argv, timeout: configuration.refreshTimeout)
        }
        return nil
    }
}
