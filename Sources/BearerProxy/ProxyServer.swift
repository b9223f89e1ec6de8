import BearerConfig
import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import BearerSession
import Dispatch
import Glibc
import Synchronization

/// A running proxy: its listening sockets, one accept path per event loop, and the shared runtime.
package final class ProxyServer: Sendable {
    package let runtime: ProxyRuntime
    /// The main listener's addresses (`listen`), as bound.
    package let boundAddresses: [SocketAddress]
    /// The named sessions' own listeners' addresses (their `listen`), as bound, in file order.
    package let sessionAddresses: [(session: String, address: SocketAddress)]
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    /// Every listening socket: the main listener's, then the named sessions' own.
    private let listeners: [BoundListener]
    let contexts: Locked<[UnsafeTransfer<LoopContext>]>
    /// The configuration in force: the one it started with, then each one SIGHUP applied.
    let configurationInForce: Locked<Configuration>
    private let accepting: Locked<[UnsafeTransfer<Listener>]>
    private let isShutDown = Atomic<Bool>(false)
    private let areListenersClosed = Atomic<Bool>(false)
    private let lastAcceptErrorLog = Atomic<Int64>(0)
    private let admin = Locked<AdminServer?>(nil)
    private let socketFiles: UnixSocketFiles

    /// Whether every event loop does its I/O through io_uring (`io = io_uring`, and the kernel allowed it).
    package var usesIOUring: Bool { self.group.loops.allSatisfy(\.usesIOUring) }

    /// Where the admin endpoints listen, when they do.
    package var adminAddress: SocketAddress? { self.admin.withLock { $0?.address } }

    /// Why the proxy could not start; one line, printed before exiting with status 1.
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
        /// What the local CA refused, when that stopped the start: `bearer-proxy run` says it its own way.
        package var localCAError: LocalCAError? = nil
    }

    /// A listening endpoint, and the session whose own listener it is (nil: the main listener).
    struct BoundListener: Sendable {
        let endpoint: ListeningEndpoint
        let sessionIndex: Int?

        var address: SocketAddress { self.endpoint.address }
    }

    /// Binds every listen address and starts accepting on every loop of `group` (a new group with
    /// `workers` loops when nil). Returns once all loops accept. Unix socket files are created through
    /// `socketFiles`, so that a signal arriving meanwhile can remove them (see `UnixSocketFiles`).
    ///
    /// `tlsFactory` replaces the TLS context built from the configuration (tests of failing TLS).
    /// `network` is where the proxy listens, resolves and connects (a test's `MemoryNetwork`: every
    /// listen address, upstream and endpoint is a name on it), and `blockingWork` where its blocking
    /// work runs (a test's settling pool: file locks, token_command, leaf certificates); with a
    /// stepped group, the thread that runs the group's loop calls this.
    package static func start(
        configuration: Configuration,
        logger: Logger,
        group: EventLoopGroup? = nil,
        tlsFactory: (any TLSConnectionFactory)? = nil,
        socketFiles: UnixSocketFiles = UnixSocketFiles(),
        network: any StreamNetwork = SocketNetwork(),
        blockingWork: BlockingWorkPool? = nil
    ) throws(StartError) -> ProxyServer {
        guard configuration.upstream != nil || !configuration.sessions.isEmpty else {
            throw StartError(description: "no upstream configured")
        }
        let sessionConfigurations = configuration.everySession
        var bound: [BoundListener] = []
        /// Undoes what was bound when start-up fails half-way.
        func closeListeners() {
            for listener in bound { listener.endpoint.close() }
            socketFiles.removeAll()
        }
        do throws(StartError) {
            for (index, session) in sessionConfigurations.enumerated() {
                for spec in session.configuration.listen {
                    let address = try Self.resolveListenAddress(spec, on: network)
                    do throws(IOError) {
                        let endpoint = try Self.listen(on: address, network: network, socketFiles: socketFiles)
                        bound.append(BoundListener(endpoint: endpoint, sessionIndex: index == 0 ? nil : index))
                    } catch {
                        throw index == 0
                            ? Self.listenFailure(spec, error, flag: "--listen")
                            : Self.listenFailure(spec, error, flag: "listen", key: "[session \(session.name)] listen ")
                    }
                }
            }
        } catch {
            closeListeners()
            throw error
        }
        var stores: [RefreshTokenStore?] = []
        do throws(RefreshTokenStore.StoreError) {
            for session in sessionConfigurations {
                let store = try RefreshTokenStore(
                    token: session.configuration.refreshToken,
                    path: session.configuration.refreshTokenFile
                )
                try store.requireFolder()
                stores.append(store)
            }
        } catch {
            closeListeners()
            throw StartError(description: error.description)
        }
        let tls: any TLSConnectionFactory
        var endpointTLS: [any TLSConnectionFactory] = []
        do throws(TLSConfigurationError) {
            tls = try configuration.outboundTLSForEverySession()
            for session in sessionConfigurations { endpointTLS.append(try session.configuration.outboundTLS()) }
        } catch {
            closeListeners()
            throw StartError(description: error.description)
        }
        let interceptCertificates: InterceptCertificates?
        do throws(StartError) {
            interceptCertificates = try Self.startInterception(
                configuration,
                blockingWork: blockingWork,
                logger: logger
            )
        } catch {
            closeListeners()
            throw error
        }
        let accessLog: LogSink?
        do throws(StartError) {
            accessLog = try Self.openAccessLog(configuration.accessLog)
        } catch {
            closeListeners()
            throw error
        }
        var adminEndpoint: ListeningEndpoint?
        if let spec = configuration.adminListen {
            do throws(StartError) {
                let address = try Self.resolveListenAddress(spec, on: network)
                do throws(IOError) {
                    adminEndpoint = try Self.listen(on: address, network: network, socketFiles: socketFiles)
                } catch {
                    throw Self.listenFailure(spec, error, flag: "--admin-listen", key: "admin_listen ")
                }
            } catch {
                closeListeners()
                throw error
            }
        }
        // What `--check` prints as warnings (tls_insecure_skip_verify, no token source, …), once at start.
        for warning in configuration.warnings {
            if let key = warning.key {
                logger.warn(warning.message, ["key": key, "at": warning.place])
            } else {
                logger.warn(warning.message, ["at": warning.place])
            }
        }
        let loops = group ?? EventLoopGroup(count: configuration.workers, io: configuration.io)
        if let reason = loops.loops.lazy.compactMap(\.ringUnavailableReason).first {
            // Containers often refuse io_uring (Docker's default seccomp profile does): only a user
            // who asked for it by name is warned; for the default it is a fact of the start.
            let message = "io_uring is not available; the event loops use epoll"
            if configuration.ioIsExplicit {
                logger.warn(message, ["reason": reason])
            } else {
                logger.info(message, ["reason": reason])
            }
        }
        let connector = OutboundConnector(
            network: network,
            tls: tlsFactory ?? tls,
            connectTimeout: configuration.upstreamConnectTimeout
        )
        let sessions = sessionConfigurations.enumerated().map { index, session in
            Self.makeSession(
                session,
                index: index,
                namesSessions: sessionConfigurations.count > 1,
                store: stores[index],
                endpoints: OutboundConnector(
                    network: network,
                    tls: tlsFactory ?? endpointTLS[index],
                    connectTimeout: configuration.upstreamConnectTimeout
                ),
                sessionStoreConnector: connector,
                // Each session's token calls and timer on a loop of their own, the default's on the first.
                loop: loops.loops[index % loops.loops.count],
                blockingWork: blockingWork ?? .shared,
                logger: logger
            )
        }
        let names = ProxyNames(
            boundAddresses: bound.map(\.address),
            acceptHosts: configuration.acceptHosts,
            listenerSessions: bound.map(\.sessionIndex)
        )
        let runtime = ProxyRuntime(
            configuration: configuration,
            router: Router(configuration: configuration, sessions: sessions, names: names),
            requestGuard: RequestGuard(configuration: configuration, names: names),
            sessions: sessions,
            connector: connector,
            accessLog: accessLog,
            interceptCertificates: interceptCertificates,
            logger: logger
        )
        let server = ProxyServer(
            runtime: runtime,
            listeners: bound,
            group: loops,
            ownsGroup: group == nil,
            socketFiles: socketFiles
        )
        server.startAccepting()
        if let adminEndpoint {
            let admin = AdminServer(
                endpoint: adminEndpoint,
                runtime: runtime,
                sessionAddresses: server.sessionAddresses,
                loops: loops.loops,
                socketFiles: socketFiles,
                contexts: { server.contexts.withLock { $0 } }
            )
            admin.start()
            server.admin.withLock { $0 = admin }
        }
        server.logStart()
        for session in sessions { session.tokens.start() }
        return server
    }

    /// Where access_log lines go (nil: off); a file is opened for appending, created 0600.
    static func openAccessLog(_ destination: AccessLogDestination) throws(StartError) -> LogSink? {
        switch destination {
        case .off:
            return nil
        case .standardError:
            return LogSink.standardError
        case .file(let path):
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw StartError(description: "\(path): access_log: cannot open: \(String(cString: strerror(errno)))")
            }
            return LogSink(fileDescriptor: fd, closesDescriptor: true)
        }
    }

    /// With tls_intercept on: the local CA, loaded or made, checked against the inject hosts.
    private static func startInterception(
        _ configuration: Configuration,
        blockingWork: BlockingWorkPool?,
        logger: Logger
    ) throws(StartError) -> InterceptCertificates? {
        guard configuration.intercept.isEnabled else { return nil }
        guard let directory = configuration.intercept.caDirectory else {
            throw StartError(description: LocalCAError.noDirectory.description)
        }
        do throws(LocalCAError) {
            return try InterceptCertificates.start(
                caDirectory: directory,
                permitting: configuration.everyInjectHost,
                configFile: configuration.settingPlaces.file,
                issuance: blockingWork,
                logger: logger
            )
        } catch {
            throw StartError(description: error.description, localCAError: error)
        }
    }

    private init(
        runtime: ProxyRuntime,
        listeners: [BoundListener],
        group: EventLoopGroup,
        ownsGroup: Bool,
        socketFiles: UnixSocketFiles
    ) {
        self.runtime = runtime
        self.listeners = listeners
        self.boundAddresses = listeners.filter { $0.sessionIndex == nil }.map(\.address)
        self.sessionAddresses = listeners.compactMap { listener in
            listener.sessionIndex.map { (runtime.sessions[$0].name, listener.address) }
        }
        self.group = group
        self.ownsGroup = ownsGroup
        self.socketFiles = socketFiles
        self.contexts = Locked([])
        self.configurationInForce = Locked(runtime.configuration)
        self.accepting = Locked([])
    }

    /// A listening endpoint; a unix socket's file is recorded in `socketFiles` as it is created.
    private static func listen(
        on address: SocketAddress,
        network: any StreamNetwork,
        socketFiles: UnixSocketFiles
    ) throws(IOError) -> ListeningEndpoint {
        var path: String?
        if case .unix(let unixPath) = address { path = unixPath }
        return try socketFiles.create(at: path) { () throws(IOError) -> ListeningEndpoint in
            try network.listen(on: address)
        }
    }

    /// `cannot listen on …: Address already in use`, with the way out: a taken port is what a first
    /// `--demo` (on 8080) most often meets.
    private static func listenFailure(
        _ spec: ListenAddressSpec,
        _ error: IOError,
        flag: String,
        key: String = ""
    ) -> StartError {
        var text = "cannot listen on \(key)\(spec): \(error.reason)"
        if error.errnoCode == EADDRINUSE, case .hostPort(let host, _) = spec {
            let anyPort = (host.contains(":") ? "[\(host)]" : host) + ":0"
            text +=
                " (another program holds the port: pick another with \(flag), or \(flag) \(anyPort) for any free one)"
        }
        return StartError(description: text)
    }

    private static func resolveListenAddress(
        _ spec: ListenAddressSpec,
        on network: any StreamNetwork
    ) throws(StartError) -> SocketAddress {
        switch spec {
        case .unix(let path):
            return .unix(path: path)
        case .hostPort(let host, let port):
            switch network.lookUp(host: host, port: port) {
            case .addresses(let addresses): return addresses[0]
            case .failed(let reason): throw StartError(description: "cannot listen on \(spec): \(reason)")
            }
        }
    }

    /// One line with the effective settings (nothing secret), for whoever reads the log later, and
    /// with named sessions one more for each of them. Without a default session
    /// (`Configuration.hasDefaultSession`) the first line names the sessions where the default one's
    /// settings were (upstream, inject_hosts, tokens, refresh_on, tls_client_cert, its fleet key):
    /// settings of no session would read as a session with no upstream and no token.
    private func logStart() {
        let configuration = self.runtime.configuration
        let workers = "\(configuration.workers)"
        let io = self.group.loops.allSatisfy(\.usesIOUring) ? "io_uring" : "epoll"
        let admin = self.adminAddress?.description ?? "off"
        let tlsVerify = configuration.tlsInsecureSkipVerify ? "OFF" : "on"
        let store = configuration.sessionStore
        if configuration.hasDefaultSession {
            self.runtime.logger.info(
                "starting",
                [
                    "version": bearerProxyVersion,
                    "upstream": configuration.upstream?.description ?? "-",
                    "inject_hosts": configuration.effectiveInjectHosts.map(\.description).joined(separator: ","),
                    "other_hosts": configuration.otherHosts.rawValue,
                    "tokens": Self.tokens(of: self.runtime.sessions[0]),
                    "refresh_on": configuration.refreshOn.map(String.init).joined(separator: ","),
                    "workers": workers, "io": io, "admin": admin, "access_log": configuration.accessLog.description,
                    "tls_verify": tlsVerify,
                    "tls_client_cert": configuration.credentials.tlsCertificate?.subject ?? "none",
                    "session_store": store.endpoint.map {
                        "\($0) session=\(store.name) fallback=\(store.fallback.rawValue)"
                    } ?? "off",
                ]
            )
        } else {
            self.runtime.logger.info(
                "starting",
                [
                    "version": bearerProxyVersion,
                    "sessions": self.runtime.shownSessions.map(\.name).joined(separator: ","),
                    "other_hosts": configuration.otherHosts.rawValue,
                    "workers": workers, "io": io, "admin": admin, "access_log": configuration.accessLog.description,
                    "tls_verify": tlsVerify,
                    "session_store": store.endpoint.map { "\($0) fallback=\(store.fallback.rawValue)" } ?? "off",
                ]
            )
        }
        for session in self.runtime.sessions.dropFirst() {
            let settings = session.configuration
            self.runtime.logger.info(
                "session",
                [
                    "session": session.name,
                    "upstream": settings.upstream?.description ?? "-",
                    "mount": settings.mount ?? "-",
                    "listen": settings.listen.isEmpty ? "-" : settings.listen.map(\.description).joined(separator: ","),
                    "inject_hosts": settings.effectiveInjectHosts.map(\.description).joined(separator: ","),
                    "tokens": Self.tokens(of: session),
                    "refresh_on": settings.refreshOn.map(String.init).joined(separator: ","),
                    "tls_client_cert": settings.credentials.tlsCertificate?.subject ?? "none",
                    "session_store": settings.sessionStore.endpoint == nil
                        ? "off" : "session=\(settings.sessionStore.name)",
                ]
            )
        }
    }

    /// Where a session's tokens come from, for the start-up lines.
    private static func tokens(of session: NamedSession) -> String {
        let configuration = session.configuration
        guard let source = session.tokens.source else {
            return configuration.accessToken == nil ? "none" : "static access_token"
        }
        switch (configuration.tokenFormat, configuration.tokenURL) {
        case (.json, _): return "json backend: \(source.logDescription)"
        case (.form, .some):
            return "\(configuration.effectiveGrantType.rawValue) at \(source.logDescription)"
                + configuration.signingSummary
        case (.form, .none): return "token_command \(source.logDescription)"
        }
    }

    private func startAccepting() {
        for loop in self.group.loops {
            loop.executeAndWait {
                let context = LoopContext(loop: loop, runtime: self.runtime)
                self.contexts.withLock { $0.append(UnsafeTransfer(context)) }
                for bound in self.listeners {
                    let isUnix = bound.address.isUnix
                    let session = bound.sessionIndex.map { self.runtime.sessions[$0] }
                    let listener = Listener(
                        endpoint: bound.endpoint,
                        loop: loop,
                        onAccept: { stream in
                            self.accept(stream, isUnix: isUnix, listenerSession: session, context: context)
                        },
                        onAcceptError: { error in self.logAcceptError(error) }
                    )
                    listener.start()
                    self.accepting.withLock { $0.append(UnsafeTransfer(listener)) }
                }
            }
        }
    }

    /// Out of descriptors, accept fails every time it is retried: say so once every few seconds.
    private func logAcceptError(_ error: IOError) {
        let now = Instant.now().nanoseconds
        let last = self.lastAcceptErrorLog.load(ordering: .relaxed)
        guard now - last > 5_000_000_000,
            self.lastAcceptErrorLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        self.runtime.logger.warn(
            "accept failed; pausing accepts briefly",
            [
                "error": error.description,
                "open_connections": "\(self.runtime.openConnections.load(ordering: .relaxed))",
            ]
        )
    }

    private func accept(_ stream: StreamConnection, isUnix: Bool, listenerSession: NamedSession?, context: LoopContext)
    {
        let open = self.runtime.openConnections.add(1, ordering: .relaxed).newValue
        let client = ClientConnection(
            stream: stream,
            context: context,
            isFromUnixSocket: isUnix,
            listenerSession: listenerSession
        )
        client.start()
        if open > self.runtime.configuration.maxConnections { client.rejectOverCapacity() }
    }

    /// Graceful stop: closes the listening sockets, closes idle connections, lets in-flight exchanges
    /// finish (their connections close after the response), and returns once none is left or
    /// `timeout` passed. Returns how many connections were still open at the end. Call `shutdown()`
    /// afterwards.
    ///
    /// The sockets are closed, not only left unwatched: the kernel goes on completing handshakes on a
    /// listening socket nobody accepts from, and a new client would wait for its own timeout. Closed,
    /// a new connection is refused at once (a unix socket's file is removed) and goes elsewhere.
    @discardableResult
    package func drain(timeout: Duration) -> Int {
        for loop in self.group.loops {
            loop.executeAndWait {
                for listener in self.accepting.withLock({ $0 }) where listener.value.loop === loop {
                    listener.value.stop()
                }
                for context in self.contexts.withLock({ $0 }) where context.value.loop === loop {
                    for client in Array(context.value.clients.values) { client.drain() }
                }
            }
        }
        self.closeListeningSockets()
        let deadline = Instant.now() + timeout
        while self.runtime.openConnections.load(ordering: .relaxed) > 0 && Instant.now() < deadline {
            usleep(10_000)
        }
        return self.runtime.openConnections.load(ordering: .relaxed)
    }

    /// Closes the listening sockets and removes their unix socket files, once: every loop has
    /// stopped watching them (a descriptor number closed twice could be another file's by then).
    private func closeListeningSockets() {
        guard !self.areListenersClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for listener in self.listeners {
            listener.endpoint.close()
            if case .unix(let path) = listener.address { self.socketFiles.remove(path) }
        }
    }

    /// Stops at once: every connection is closed, in-flight requests are cut.
    package func shutdown() {
        guard !self.isShutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let admin = self.admin.withLock { $0 }
        admin?.stop()
        // Before the loops' round below, which then also waits for their timers to be cancelled.
        for session in self.runtime.sessions { session.tokens.stop() }
        for loop in self.group.loops {
            loop.executeAndWait {
                for listener in self.accepting.withLock({ $0 }) where listener.value.loop === loop {
                    listener.value.stop()
                }
                for context in self.contexts.withLock({ $0 }) where context.value.loop === loop {
                    for client in Array(context.value.clients.values) { client.closeNow() }
                    context.value.accessLog?.flush()
                    context.value.pool.closeAll()
                }
            }
        }
        for session in self.runtime.sessions { session.tokens.sessionStore?.stop() }
        self.closeListeningSockets()
        if self.ownsGroup { self.group.shutdown() }
        admin?.closeSocket()
    }
}
