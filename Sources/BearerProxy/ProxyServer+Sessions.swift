import BearerCore
import BearerIO

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
        let endpoints = EndpointCaller(configuration: configuration, loop: loop, connector: connector)
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
            source: Self.makeTokenSource(configuration, store: store, endpoints: endpoints, logger: logger),
            store: store,
            sessionStore: sessionStore,
            logger: logger,
            timers: loop
        )
        return NamedSession(
            name: session.name,
            index: index,
            tokens: tokens,
            configuration: configuration,
            revocation: TokenRevocation(configuration: configuration, client: endpoints)
        )
    }

    static func makeTokenSource(
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
