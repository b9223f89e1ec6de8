import BearerConfig
import BearerCore
import BearerCrypto
import BearerIO
import BearerSession

/// Making each session of a starting proxy: its token source, its fleet store, its token session.
extension ProxyServer {
    /// `session` made ready to run: its token calls go through `endpoints` (which present the
    /// session's own client certificate) from `loop`, which also runs its timer, signed with
    /// `credentials` and proved with `dpop`. With named sessions its log lines say `session=NAME`.
    static func makeSession(
        _ session: SessionSettings,
        process: ProcessSettings,
        index: Int,
        namesSessions: Bool,
        store: RefreshTokenStore?,
        credentials: SessionCredentials,
        dpop: DPoPProver?,
        endpoints connector: OutboundConnector,
        sessionStoreConnector: OutboundConnector,
        loop: EventLoop,
        blockingWork: BlockingWorkPool,
        logger: Logger
    ) -> NamedSession {
        let logger = namesSessions ? logger.with("session", session.name) : logger
        let supplies = TokenSupplyMaker(
            loop: loop,
            endpoints: connector,
            timeout: process.refreshTimeout,
            dpop: dpop,
            blockingWork: blockingWork,
            logger: logger
        )
        let sessionStore = process.sessionStore.endpoint.map { endpoint in
            SessionStore(
                endpoint: endpoint,
                name: session.sessionName,
                fallback: process.sessionStore.fallback,
                lockTimeout: process.refreshTimeout,
                commandTimeout: process.upstreamConnectTimeout,
                loop: loop,
                connector: sessionStoreConnector,
                logger: logger
            )
        }
        let tokens = TokenSession(
            settings: session,
            process: process,
            supply: supplies.supply(session, credentials: credentials, store: store),
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
            settings: session,
            dpop: dpop,
            supplies: supplies
        )
    }
}

/// Makes a session's token supply from its settings and the keys read from its files: at start,
/// and again each time SIGHUP re-reads the config. What it is made with lasts as long as the
/// process: the loop its token calls start from, the connector that reaches its endpoints (TLS
/// settings need a restart), refresh_timeout and the DPoP key its proofs are signed with.
struct TokenSupplyMaker: Sendable {
    let loop: EventLoop
    let endpoints: OutboundConnector
    /// refresh_timeout: how long a token call may take.
    let timeout: Duration
    let dpop: DPoPProver?
    /// Where the token sources' blocking work runs (file locks, token_command).
    let blockingWork: BlockingWorkPool
    let logger: Logger

    func supply(
        _ settings: SessionSettings,
        credentials: SessionCredentials,
        store: RefreshTokenStore?
    )
        -> TokenSupply
    {
        let caller = EndpointCaller(timeout: self.timeout, dpop: self.dpop, loop: self.loop, connector: self.endpoints)
        return TokenSupply(
            settings: settings,
            source: self.source(settings, credentials: credentials, store: store, endpoints: caller),
            store: store,
            revocation: TokenRevocation(settings: settings, credentials: credentials, client: caller)
        )
    }

    private func source(
        _ settings: SessionSettings,
        credentials: SessionCredentials,
        store: RefreshTokenStore?,
        endpoints: EndpointCaller
    ) -> TokenSource? {
        if settings.tokenFormat == .json && settings.canRefresh {
            return JSONTokenSource(
                settings: settings,
                store: store,
                client: endpoints,
                logger: self.logger,
                pool: self.blockingWork
            )
        }
        if let url = settings.tokenURL {
            return OAuth2TokenSource(
                settings: settings,
                credentials: credentials,
                url: url,
                store: store,
                client: endpoints,
                logger: self.logger,
                pool: self.blockingWork
            )
        }
        if let argv = settings.tokenCommand {
            return CommandTokenSource(argv: argv, timeout: self.timeout, pool: self.blockingWork)
        }
        return nil
    }
}
