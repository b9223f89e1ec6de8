import BearerConfig
import BearerCore
import BearerCrypto
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
        credentials: SessionCredentials,
        dpop: DPoPProver?,
        endpoints connector: OutboundConnector,
        sessionStoreConnector: OutboundConnector,
        loop: EventLoop,
        logger: Logger
    ) -> NamedSession {
        let configuration = session.configuration
        let logger = namesSessions ? logger.with("session", session.name) : logger
        let supplies = TokenSupplyMaker(loop: loop, endpoints: connector, dpop: dpop, logger: logger)
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
            supply: supplies.supply(configuration, credentials: credentials, store: store),
            sessionStore: sessionStore,
            logger: logger,
            timers: loop
        )
        return NamedSession(
            name: session.name,
            index: index,
            tokens: tokens,
            configuration: configuration,
            dpop: dpop,
            supplies: supplies
        )
    }
}

/// Makes a session's token supply from its configuration and the keys read from its files: at
/// start, and again each time SIGHUP re-reads the config. What it is made with lasts as long as the
/// process: the loop its token calls start from, the connector that reaches its endpoints (TLS
/// settings need a restart) and the DPoP key its proofs are signed with.
struct TokenSupplyMaker: Sendable {
    let loop: EventLoop
    let endpoints: OutboundConnector
    let dpop: DPoPProver?
    let logger: Logger

    func supply(
        _ configuration: Configuration,
        credentials: SessionCredentials,
        store: RefreshTokenStore?
    )
        -> TokenSupply
    {
        let caller = EndpointCaller(
            configuration: configuration,
            dpop: self.dpop,
            loop: self.loop,
            connector: self.endpoints
        )
        return TokenSupply(
            configuration: configuration,
            source: Self.source(
                configuration,
                credentials: credentials,
                store: store,
                endpoints: caller,
                logger: self.logger
            ),
            store: store,
            revocation: TokenRevocation(configuration: configuration, credentials: credentials, client: caller)
        )
    }

    static func source(
        _ configuration: Configuration,
        credentials: SessionCredentials,
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
                credentials: credentials,
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
