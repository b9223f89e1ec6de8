import BearerCore
import BearerHTTP
import BearerIO
import Dispatch
import Glibc
import Synchronization

/// A running proxy: its listening sockets, one accept path per event loop, and the shared runtime.
package final class ProxyServer: Sendable {
    package let runtime: ProxyRuntime
    package let boundAddresses: [SocketAddress]
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let listenFDs: [Int32]
    private let contexts: Locked<[UnsafeTransfer<LoopContext>]>
    private let listeners: Locked<[UnsafeTransfer<Listener>]>
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
    }

    /// Binds every listen address and starts accepting on every loop of `group` (a new group with
    /// `workers` loops when nil). Returns once all loops accept. Unix socket files are created through
    /// `socketFiles`, so that a signal arriving meanwhile can remove them (see `UnixSocketFiles`).
    ///
    /// `tlsFactory` replaces the TLS context built from the configuration (tests of failing TLS).
    package static func start(
        configuration: Configuration,
        logger: Logger,
        group: EventLoopGroup? = nil,
        tlsFactory: (any TLSConnectionFactory)? = nil,
        socketFiles: UnixSocketFiles = UnixSocketFiles()
    ) throws(StartError) -> ProxyServer {
        guard let upstream = configuration.upstream else { throw StartError(description: "no upstream configured") }
        var fds: [Int32] = []
        var addresses: [SocketAddress] = []
        /// Undoes what was bound when start-up fails half-way.
        func closeListeners() {
            for fd in fds { Socket.close(fd) }
            socketFiles.removeAll()
        }
        do throws(StartError) {
            for spec in configuration.listen {
                let address = try Self.resolveListenAddress(spec)
                do throws(IOError) {
                    let fd = try Self.listen(on: address, socketFiles: socketFiles)
                    fds.append(fd)
                    addresses.append(Socket.localAddress(fd) ?? address)
                } catch {
                    throw Self.listenFailure(spec, error, flag: "--listen")
                }
            }
        } catch {
            closeListeners()
            throw error
        }
        let store: RefreshTokenStore?
        do throws(RefreshTokenStore.StoreError) {
            store = try RefreshTokenStore(token: configuration.refreshToken, path: configuration.refreshTokenFile)
            try store?.requireFolder()
        } catch {
            closeListeners()
            throw StartError(description: error.description)
        }
        let tls: any TLSConnectionFactory
        do throws(TLSConfigurationError) {
            tls = try configuration.outboundTLS()
        } catch {
            closeListeners()
            throw StartError(description: error.description)
        }
        let interceptCertificates: InterceptCertificates?
        do throws(StartError) {
            interceptCertificates = try Self.startInterception(configuration, logger: logger)
        } catch {
            closeListeners()
            throw error
        }
        var accessLog: LogSink?
        switch configuration.accessLog {
        case .off: accessLog = nil
        case .standardError: accessLog = LogSink.standardError
        case .file(let path):
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                closeListeners()
                throw StartError(description: "\(path): access_log: cannot open: \(String(cString: strerror(errno)))")
            }
            accessLog = LogSink(fileDescriptor: fd, closesDescriptor: true)
        }
        var adminFD: Int32?
        var adminAddress: SocketAddress?
        if let spec = configuration.adminListen {
            do throws(StartError) {
                let address = try Self.resolveListenAddress(spec)
                do throws(IOError) {
                    let fd = try Self.listen(on: address, socketFiles: socketFiles)
                    adminFD = fd
                    adminAddress = Socket.localAddress(fd) ?? address
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
        let names = ProxyNames(boundAddresses: addresses, acceptHosts: configuration.acceptHosts)
        let router = Router(configuration: configuration, upstream: upstream, names: names)
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
            resolver: Resolver(),
            tls: tlsFactory ?? tls,
            connectTimeout: configuration.upstreamConnectTimeout
        )
        let endpoints = EndpointCaller(configuration: configuration, loop: loops.loops[0], connector: connector)
        let source = Self.makeTokenSource(configuration, store: store, endpoints: endpoints, logger: logger)
        let sessionStore = configuration.sessionStore.endpoint.map { endpoint in
            SessionStore(
                endpoint: endpoint,
                name: configuration.sessionStore.name,
                lockTimeout: configuration.refreshTimeout,
                commandTimeout: configuration.upstreamConnectTimeout,
                loop: loops.loops[0],
                connector: connector,
                logger: logger
            )
        }
        let session = TokenSession(
            configuration: configuration,
            source: source,
            store: store,
            sessionStore: sessionStore,
            logger: logger,
            timers: loops.loops[0]
        )
        let runtime = ProxyRuntime(
            configuration: configuration,
            router: router,
            requestGuard: RequestGuard(configuration: configuration, names: names),
            session: session,
            connector: connector,
            accessLog: accessLog,
            interceptCertificates: interceptCertificates,
            logger: logger
        )
        let server = ProxyServer(
            runtime: runtime,
            addresses: addresses,
            group: loops,
            ownsGroup: group == nil,
            fds: fds,
            socketFiles: socketFiles
        )
        server.startAccepting()
        if let adminFD, let adminAddress {
            let revocation = TokenRevocation(configuration: configuration, client: endpoints)
            let admin = AdminServer(
                fd: adminFD,
                address: adminAddress,
                runtime: runtime,
                revocation: revocation,
                loops: loops.loops,
                socketFiles: socketFiles,
                contexts: { server.contexts.withLock { $0 } }
            )
            admin.start()
            server.admin.withLock { $0 = admin }
        }
        server.logStart(source: source)
        session.start()
        return server
    }

    /// With tls_intercept on: the local CA, loaded or made, checked against the inject hosts.
    private static func startInterception(
        _ configuration: Configuration,
        logger: Logger
    ) throws(StartError) -> InterceptCertificates? {
        guard configuration.intercept.isEnabled else { return nil }
        guard let directory = configuration.intercept.caDirectory else {
            throw StartError(description: LocalCAError.noDirectory.description)
        }
        do throws(LocalCAError) {
            return try InterceptCertificates.start(
                caDirectory: directory,
                permitting: configuration.effectiveInjectHosts,
                logger: logger
            )
        } catch {
            throw StartError(description: error.description)
        }
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

    private init(
        runtime: ProxyRuntime,
        addresses: [SocketAddress],
        group: EventLoopGroup,
        ownsGroup: Bool,
        fds: [Int32],
        socketFiles: UnixSocketFiles
    ) {
        self.runtime = runtime
        self.boundAddresses = addresses
        self.group = group
        self.ownsGroup = ownsGroup
        self.listenFDs = fds
        self.socketFiles = socketFiles
        self.contexts = Locked([])
        self.listeners = Locked([])
    }

    /// A listening socket; a unix socket's file is recorded in `socketFiles` as it is created.
    private static func listen(on address: SocketAddress, socketFiles: UnixSocketFiles) throws(IOError) -> Int32 {
        var path: String?
        if case .unix(let unixPath) = address { path = unixPath }
        return try socketFiles.create(at: path) { () throws(IOError) -> Int32 in try Socket.listen(on: address) }
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

    private static func resolveListenAddress(_ spec: ListenAddressSpec) throws(StartError) -> SocketAddress {
        switch spec {
        case .unix(let path):
            return .unix(path: path)
        case .hostPort(let host, let port):
            if let literal = SocketAddress(ipAddress: host, port: port) { return literal }
            switch Resolver.lookUp(host: host, port: port) {
            case .addresses(let addresses): return addresses[0]
            case .failed(let reason): throw StartError(description: "cannot listen on \(spec): \(reason)")
            }
        }
    }

    /// One line with the effective settings (nothing secret), for whoever reads the log later.
    private func logStart(source: TokenSource?) {
        let configuration = self.runtime.configuration
        let tokens: String
        if let source {
            switch (configuration.tokenFormat, configuration.tokenURL) {
            case (.json, _): tokens = "json backend: \(source.logDescription)"
            case (.form, .some):
                tokens =
                    "\(configuration.effectiveGrantType.rawValue) at \(source.logDescription)"
                    + configuration.signingSummary
            case (.form, .none): tokens = "token_command \(source.logDescription)"
            }
        } else {
            tokens = configuration.accessToken == nil ? "none" : "static access_token"
        }
        self.runtime.logger.info(
            "starting",
            [
                "version": CommandLineOptions.version,
                "upstream": configuration.upstream?.description ?? "-",
                "inject_hosts": configuration.effectiveInjectHosts.map(\.description).joined(separator: ","),
                "other_hosts": configuration.otherHosts.rawValue,
                "tokens": tokens,
                "refresh_on": configuration.refreshOn.map(String.init).joined(separator: ","),
                "workers": "\(configuration.workers)",
                "io": self.group.loops.allSatisfy(\.usesIOUring) ? "io_uring" : "epoll",
                "admin": self.adminAddress?.description ?? "off",
                "access_log": configuration.accessLog.description,
                "tls_verify": configuration.tlsInsecureSkipVerify ? "OFF" : "on",
                "tls_client_cert": configuration.credentials.tlsCertificate?.subject ?? "none",
                "session_store": configuration.sessionStore.endpoint.map {
                    "\($0) session=\(configuration.sessionStore.name) fallback=\(configuration.sessionStore.fallback.rawValue)"
                } ?? "off",
            ]
        )
    }

    private func startAccepting() {
        let ready = DispatchSemaphore(value: 0)
        for loop in self.group.loops {
            loop.execute {
                let context = LoopContext(loop: loop, runtime: self.runtime)
                self.contexts.withLock { $0.append(UnsafeTransfer(context)) }
                for fd in self.listenFDs {
                    let isUnix = self.boundAddresses[self.listenFDs.firstIndex(of: fd)!].isUnix
                    let listener = Listener(
                        fd: fd,
                        loop: loop,
                        onAccept: { clientFD in self.accept(clientFD, isUnix: isUnix, context: context) },
                        onAcceptError: { error in self.logAcceptError(error) }
                    )
                    listener.start()
                    self.listeners.withLock { $0.append(UnsafeTransfer(listener)) }
                }
                ready.signal()
            }
        }
        for _ in self.group.loops { ready.wait() }
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

    private func accept(_ fd: Int32, isUnix: Bool, context: LoopContext) {
        if !isUnix { Socket.setNoDelay(fd) }
        let stream = StreamConnection(fd: fd, loop: context.loop, isConnecting: false)
        let open = self.runtime.openConnections.add(1, ordering: .relaxed).newValue
        let client = ClientConnection(stream: stream, context: context, isFromUnixSocket: isUnix)
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
        let done = DispatchSemaphore(value: 0)
        for loop in self.group.loops {
            loop.execute {
                for listener in self.listeners.withLock({ $0 }) where listener.value.loop === loop {
                    listener.value.stop()
                }
                for context in self.contexts.withLock({ $0 }) where context.value.loop === loop {
                    for client in Array(context.value.clients.values) { client.drain() }
                }
                done.signal()
            }
        }
        for _ in self.group.loops { done.wait() }
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
        for (index, fd) in self.listenFDs.enumerated() {
            Socket.close(fd)
            if case .unix(let path) = self.boundAddresses[index] { self.socketFiles.remove(path) }
        }
    }

    /// Stops at once: every connection is closed, in-flight requests are cut.
    package func shutdown() {
        guard !self.isShutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let admin = self.admin.withLock { $0 }
        admin?.stop()
        // Before the loops' round below, which then also waits for its timers to be cancelled.
        self.runtime.session.stop()
        let done = DispatchSemaphore(value: 0)
        for loop in self.group.loops {
            loop.execute {
                for listener in self.listeners.withLock({ $0 }) where listener.value.loop === loop {
                    listener.value.stop()
                }
                for context in self.contexts.withLock({ $0 }) where context.value.loop === loop {
                    for client in Array(context.value.clients.values) { client.closeNow() }
                    context.value.accessLog?.flush()
                    context.value.pool.closeAll()
                }
                done.signal()
            }
        }
        for _ in self.group.loops { done.wait() }
        self.runtime.session.sessionStore?.stop()
        self.closeListeningSockets()
        if self.ownsGroup { self.group.shutdown() }
        admin?.closeSocket()
    }
}
