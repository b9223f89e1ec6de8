import BearerConfig
import BearerCore
import BearerCrypto
import BearerIO
import BearerSession
import FoundationEssentials
import Glibc

/// Starts a proxy from its configuration (`ProxyServer.start`): the live objects its settings
/// describe are made here, in one place and one order, and a start that fails half-way gives back
/// what it acquired in one place too.
///
/// The steps that can fail come first: the listeners; each session's refresh token store, keys
/// (read from their files, a DPoP key made when there is none yet) and the TLS of its ways out; the
/// local CA (with tls_intercept); the access log; the admin listener. Then what cannot fail: the
/// loops, the sessions, the runtime, the accepting, the start lines. Whatever a step acquired that a
/// failed start must give back (a listening socket, a unix socket's file) is recorded with how, and
/// `start` gives back everything recorded, newest first, when any step throws. What needs no giving
/// back is left as it is: an access log file closes with its sink, and a DPoP key or a local CA made
/// on the way stays made for the next start.
struct ProxyBuilder {
    typealias StartError = ProxyServer.StartError

    /// As loaded, then with the endpoints each session's `issuer` names filled in.
    private var configuration: Configuration
    private let logger: Logger
    private let socketFiles: UnixSocketFiles
    /// Where the proxy listens, resolves and connects: the kernel's, or a test's memory network.
    private let network: any StreamNetwork
    /// Where blocking work runs (file locks, token_command, leaf certificates); nil: the shared pool.
    private let blockingWork: BlockingWorkPool?
    /// How to give back what the steps so far acquired, in the order they acquired it.
    private var acquired: [() -> Void] = []

    /// The keys a session signs and proves with.
    private struct SessionKeys {
        var credentials: SessionCredentials
        var dpop: DPoPProver?
    }

    /// A running proxy for `configuration`, or why not after giving back whatever was acquired (see
    /// `ProxyServer.start`).
    static func start(
        configuration: Configuration,
        logger: Logger,
        group: EventLoopGroup?,
        tlsFactory: (any TLSConnectionFactory)?,
        socketFiles: UnixSocketFiles,
        network: any StreamNetwork,
        blockingWork: BlockingWorkPool?
    ) throws(StartError) -> ProxyServer {
        var builder = ProxyBuilder(
            configuration: configuration,
            logger: logger,
            socketFiles: socketFiles,
            network: network,
            blockingWork: blockingWork
        )
        do throws(StartError) {
            return try builder.build(group: group, tlsFactory: tlsFactory)
        } catch {
            for giveBack in builder.acquired.reversed() { giveBack() }
            throw error
        }
    }

    private init(
        configuration: Configuration,
        logger: Logger,
        socketFiles: UnixSocketFiles,
        network: any StreamNetwork,
        blockingWork: BlockingWorkPool?
    ) {
        self.configuration = configuration
        self.logger = logger
        self.socketFiles = socketFiles
        self.network = network
        self.blockingWork = blockingWork
    }

    private mutating func build(
        group: EventLoopGroup?,
        tlsFactory: (any TLSConnectionFactory)?
    ) throws(StartError) -> ProxyServer {
        var configuration = self.configuration
        let process = configuration.process
        guard configuration.defaultSession.upstream != nil || !configuration.namedSessions.isEmpty else {
            throw StartError(description: "no upstream configured")
        }
        let listeners = try self.bindListeners()
        let stores = try Self.openRefreshTokenStores(configuration.sessions)
        let keys = try Self.readKeys(of: configuration)
        let certificates = keys.map(\.credentials.tlsCertificate)
        let upstreamTLS: any TLSConnectionFactory
        var endpointTLS: [any TLSConnectionFactory] = []
        do throws(TLSConfigurationError) {
            upstreamTLS = try process.outboundTLS(presenting: Array(zip(configuration.sessions, certificates)))
            for (session, certificate) in zip(configuration.sessions, certificates) {
                endpointTLS.append(try process.outboundTLS(for: session, presenting: certificate))
            }
        } catch {
            throw StartError(description: error.description)
        }
        configuration = try self.discoverEndpoints(tls: tlsFactory, endpointTLS: endpointTLS)
        // A client login registered and kept in the keyring, beside the refresh token.
        for (index, store) in stores.enumerated() {
            KeyringRegisteredClient(store.keyring?.items, of: configuration.sessions[index])?
                .fill(&configuration.sessions[index])
        }
        let interceptCertificates = try self.startInterception()
        let accessLog = try Self.openAccessLog(process.accessLog)
        let admin = try process.adminListen.map { spec throws(StartError) in
            try self.bind(spec, flag: "--admin-listen", key: "\(ConfigurationKey.adminListen) ")
        }

        // Nothing below fails.
        self.logWarnings()
        let auditLog = AuditLogFile.open(process.auditLog, logger: self.logger)
        let loops = self.startLoops(group)
        let connector = OutboundConnector(
            network: self.network,
            tls: tlsFactory ?? upstreamTLS,
            connectTimeout: process.upstreamConnectTimeout
        )
        let sessions = configuration.sessions.enumerated().map { index, session in
            ProxyServer.makeSession(
                session,
                process: process,
                index: index,
                namesSessions: configuration.sessions.count > 1,
                store: stores[index],
                credentials: keys[index].credentials,
                dpop: keys[index].dpop,
                endpoints: OutboundConnector(
                    network: self.network,
                    tls: tlsFactory ?? endpointTLS[index],
                    connectTimeout: process.upstreamConnectTimeout
                ),
                sessionStoreConnector: connector,
                // Each session's token calls and timer on a loop of their own, the default's on the first.
                loop: loops.loops[index % loops.loops.count],
                blockingWork: self.blockingWork ?? .shared,
                logger: self.logger
            )
        }
        let names = ProxyNames(
            boundAddresses: listeners.map(\.address),
            acceptHosts: process.acceptHosts,
            listenerSessions: listeners.map(\.sessionIndex)
        )
        let router = Router(configuration: configuration, sessions: sessions, names: names)
        let runtime = ProxyRuntime(
            configuration: configuration,
            router: router,
            requestGuard: RequestGuard(configuration: configuration, names: names),
            sessions: sessions,
            connector: connector,
            accessLog: accessLog,
            auditLog: auditLog,
            interceptCertificates: interceptCertificates,
            logger: self.logger
        )
        let server = ProxyServer(
            runtime: runtime,
            listeners: listeners,
            group: loops,
            ownsGroup: group == nil,
            socketFiles: self.socketFiles
        )
        server.startAccepting()
        if let admin { server.startAdmin(on: admin) }
        Self.logStart(of: server)
        Self.logDiscovery(of: server)
        for session in sessions { session.tokens.start() }
        return server
    }

    /// The configuration with each `issuer`'s metadata read (through each session's way to its
    /// endpoints), kept for what follows.
    private mutating func discoverEndpoints(
        tls: (any TLSConnectionFactory)?,
        endpointTLS: [any TLSConnectionFactory]
    ) throws(StartError) -> Configuration {
        let network = self.network
        let timeout = self.configuration.process.upstreamConnectTimeout
        do throws(DiscoveryError) {
            self.configuration = try AuthorizationServerDiscovery.fill(self.configuration) { index in
                OutboundConnector(network: network, tls: tls ?? endpointTLS[index], connectTimeout: timeout)
            }
        } catch {
            throw StartError(description: error.description)
        }
        return self.configuration
    }

    /// Every session's `listen`: the main listener's addresses (the default session's), then each
    /// named session's own.
    private mutating func bindListeners() throws(StartError) -> [ProxyServer.BoundListener] {
        var bound: [ProxyServer.BoundListener] = []
        for (index, session) in self.configuration.sessions.enumerated() {
            for spec in session.listen {
                let listener =
                    index == 0
                    ? try self.bind(spec, flag: "--listen")
                    : try self.bind(spec, flag: "listen", key: "[session \(session.name)] \(ConfigurationKey.listen) ")
                bound.append(.init(endpoint: listener, sessionIndex: index == 0 ? nil : index))
            }
        }
        return bound
    }

    /// A listening endpoint on `spec`, recorded to be closed (and a unix socket's file removed) if the
    /// start fails. `flag` and `key` name the setting in the error of a port in use.
    private mutating func bind(
        _ spec: ListenAddressSpec,
        flag: String,
        key: String = ""
    ) throws(StartError) -> ListeningEndpoint {
        let address = try self.resolveListenAddress(spec)
        var path: String?
        if case .unix(let unixPath) = address { path = unixPath }
        let endpoint: ListeningEndpoint
        do throws(IOError) {
            let network = self.network
            endpoint = try self.socketFiles.create(at: path) { () throws(IOError) -> ListeningEndpoint in
                try network.listen(on: address)
            }
        } catch {
            throw Self.listenFailure(spec, error, flag: flag, key: key)
        }
        let socketFiles = self.socketFiles
        self.acquired.append {
            endpoint.close()
            if let path { socketFiles.remove(path) }
        }
        return endpoint
    }

    /// `cannot listen on …: Address already in use`, with the way out: a taken port is what a first
    /// `--demo` (on 8080) most often meets.
    private static func listenFailure(
        _ spec: ListenAddressSpec,
        _ error: IOError,
        flag: String,
        key: String
    ) -> StartError {
        var text = "cannot listen on \(key)\(spec): \(error.reason)"
        if error.errnoCode == EADDRINUSE, case .hostPort(let host, _) = spec {
            let anyPort = (host.contains(":") ? "[\(host)]" : host) + ":0"
            text +=
                " (another program holds the port: pick another with \(flag), or \(flag) \(anyPort) for any free one)"
        }
        return StartError(description: text)
    }

    private func resolveListenAddress(_ spec: ListenAddressSpec) throws(StartError) -> SocketAddress {
        switch spec {
        case .unix(let path):
            return .unix(path: path)
        case .hostPort(let host, let port):
            switch self.network.lookUp(host: host, port: port) {
            case .addresses(let addresses): return addresses[0]
            case .failed(let reason): throw StartError(description: "cannot listen on \(spec): \(reason)")
            }
        }
    }

    /// Each session's refresh token, where its credential_store keeps it (`CredentialStoreChoice`):
    /// in memory and in its refresh_token_file, whose folder must exist, or in the keyring.
    static func openRefreshTokenStores(
        _ sessions: [SessionSettings],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(StartError) -> [RefreshTokenStore] {
        do throws(RefreshTokenStore.StoreError) {
            return try sessions.map { session throws(RefreshTokenStore.StoreError) in
                try CredentialStoreChoice.choose(for: session, environment: environment).open(for: session)
            }
        } catch {
            throw StartError(description: error.description)
        }
    }

    /// The keys each session signs and proves with, read from their files now (loading the
    /// configuration only checked them), its DPoP key made when there is none yet.
    private static func readKeys(of configuration: Configuration) throws(StartError) -> [SessionKeys] {
        do throws(ConfigurationError) {
            return try configuration.sessions.map { session throws(ConfigurationError) in
                let places = configuration.places(of: session.name)
                return SessionKeys(
                    credentials: try SessionCredentials(reading: session, places: places),
                    dpop: try session.dpop.makeProver(places: places)
                )
            }
        } catch {
            throw StartError(description: error.description)
        }
    }

    /// With tls_intercept on: the local CA, loaded or made, checked against the inject hosts.
    private func startInterception() throws(StartError) -> InterceptCertificates? {
        let intercept = self.configuration.process.intercept
        guard intercept.isEnabled else { return nil }
        guard let directory = intercept.caDirectory else {
            throw StartError(description: LocalCAError.noDirectory.description)
        }
        do throws(LocalCAError) {
            return try InterceptCertificates.start(
                caDirectory: directory,
                permitting: self.configuration.everyInjectHost,
                configFile: self.configuration.provenance.file,
                offersHTTP2: self.configuration.process.http2,
                issuance: self.blockingWork,
                logger: self.logger
            )
        } catch {
            throw StartError(description: error.description, localCAError: error)
        }
    }

    /// Where access_log lines go (nil: off); a file is opened for appending, created 0600. SIGHUP
    /// opens a new one through here too.
    static func openAccessLog(_ destination: AccessLogDestination) throws(StartError) -> LogSink? {
        switch destination {
        case .off:
            return nil
        case .standardError:
            return LogSink.standardError
        case .file(let path):
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw StartError(
                    description:
                        "\(path): \(ConfigurationKey.accessLog): cannot open: \(String(cString: strerror(errno)))"
                )
            }
            return LogSink(fileDescriptor: fd, closesDescriptor: true)
        }
    }

    /// What `--check` prints as warnings (tls_insecure_skip_verify, no token source, …), once at start.
    private func logWarnings() {
        for warning in self.configuration.warnings {
            if let key = warning.key {
                self.logger.warn(warning.message, ["key": key, "at": warning.place])
            } else {
                self.logger.warn(warning.message, ["at": warning.place])
            }
        }
    }

    /// `group`, or `workers` new loops doing their I/O as `io` says.
    private func startLoops(_ group: EventLoopGroup?) -> EventLoopGroup {
        let process = self.configuration.process
        let loops = group ?? EventLoopGroup(count: process.workers, io: process.io)
        if let reason = loops.loops.lazy.compactMap(\.ringUnavailableReason).first {
            // Containers often refuse io_uring (Docker's default seccomp profile does): only a user
            // who asked for it by name is warned; for the default it is a fact of the start.
            let message = "io_uring is not available; the event loops use epoll"
            if self.configuration.ioIsExplicit {
                self.logger.warn(message, ["reason": reason])
            } else {
                self.logger.info(message, ["reason": reason])
            }
        }
        return loops
    }
}
