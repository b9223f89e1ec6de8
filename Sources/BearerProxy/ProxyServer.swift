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
        try ProxyBuilder.start(
            configuration: configuration,
            logger: logger,
            group: group,
            tlsFactory: tlsFactory,
            socketFiles: socketFiles,
            network: network,
            blockingWork: blockingWork
        )
    }

    /// A proxy `ProxyBuilder` made, before it accepts.
    init(
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

    /// Starts the admin endpoints on `endpoint`.
    func startAdmin(on endpoint: ListeningEndpoint) {
        let admin = AdminServer(
            endpoint: endpoint,
            runtime: self.runtime,
            sessionAddresses: self.sessionAddresses,
            loops: self.group.loops,
            socketFiles: self.socketFiles,
            contexts: { self.contexts.withLock { $0 } }
        )
        admin.start()
        self.admin.withLock { $0 = admin }
    }

    /// Starts accepting on every loop; returns once all loops accept.
    func startAccepting() {
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
        return self.runtime.lastConnectionClosed.wait(until: Instant.now() + timeout) {
            self.runtime.openConnections.load(ordering: .sequentiallyConsistent)
        }
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
                    context.value.auditLog?.flush()
                    context.value.pool.closeAll()
                    context.value.http2Upstreams.closeAll()
                }
            }
        }
        // Written by threads of their own, which the process's exit would cut short: the last
        // exchanges' lines are on disk before it.
        self.runtime.accessLog?.flush()
        self.runtime.auditLog?.flush()
        for session in self.runtime.sessions { session.tokens.sessionStore?.stop() }
        self.closeListeningSockets()
        if self.ownsGroup { self.group.shutdown() }
        admin?.closeSocket()
    }
}
