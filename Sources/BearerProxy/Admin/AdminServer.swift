import BearerCore
import BearerIO
import Glibc
import Synchronization

/// The admin listener (`admin_listen`), on the proxy's own event loops. Off unless configured.
final class AdminServer: Sendable {
    let runtime: ProxyRuntime
    let requestGuard: RequestGuard
    let isUnixSocket: Bool
    let address: SocketAddress
    /// The named sessions' own listeners, as bound (for `/status`).
    let sessionAddresses: [(session: String, address: SocketAddress)]
    private let endpoint: ListeningEndpoint
    private let loops: [EventLoop]
    private let socketFiles: UnixSocketFiles
    private let contexts: @Sendable () -> [UnsafeTransfer<LoopContext>]
    private let listeners = Locked<[UnsafeTransfer<Listener>]>([])
    /// `/events`' viewers, on the admin's loop (the first), where its connections live.
    let viewers: UnsafeTransfer<EventStreamViewers>

    init(
        endpoint: ListeningEndpoint,
        runtime: ProxyRuntime,
        sessionAddresses: [(session: String, address: SocketAddress)] = [],
        loops: [EventLoop],
        socketFiles: UnixSocketFiles,
        contexts: @escaping @Sendable () -> [UnsafeTransfer<LoopContext>]
    ) {
        self.endpoint = endpoint
        self.address = endpoint.address
        self.runtime = runtime
        self.sessionAddresses = sessionAddresses
        self.loops = loops
        self.socketFiles = socketFiles
        self.contexts = contexts
        self.viewers = UnsafeTransfer(EventStreamViewers(loop: loops[0]))
        self.isUnixSocket = address.isUnix
        self.requestGuard = RequestGuard(
            configuration: runtime.configuration,
            names: ProxyNames(boundAddresses: [address], acceptHosts: runtime.configuration.acceptHosts),
            acceptsOwnOrigin: true
        )
    }

    func start() {
        let loop = self.loops[0]
        loop.execute {
            let listener = Listener(
                endpoint: self.endpoint,
                loop: loop,
                onAccept: { stream in stream.start(delegate: AdminConnection(stream: stream, server: self)) },
                onAcceptError: { error in self.runtime.logger.warn("admin accept failed", ["error": error.description])
                }
            )
            listener.start()
            self.listeners.withLock { $0.append(UnsafeTransfer(listener)) }
        }
    }

    func stop() {
        let loop = self.loops[0]
        loop.execute {
            for listener in self.listeners.withLock({ $0 }) { listener.value.stop() }
        }
    }

    func closeSocket() {
        self.endpoint.close()
        if case .unix(let path) = self.address { self.socketFiles.remove(path) }
    }

    /// The addresses `session`'s own listener is bound to.
    func sessionListeners(_ session: NamedSession) -> [String] {
        self.sessionAddresses.filter { $0.session == session.name }.map(\.address.description)
    }

    /// Collects every loop's counters (each on its own loop), then calls `completion` on `home`.
    func gatherLoopMetrics(from home: EventLoop, _ completion: @escaping (LoopMetrics) -> Void) {
        let contexts = self.contexts()
        let remaining = Locked((count: contexts.count, total: LoopMetrics()))
        let done = UnsafeTransfer(completion)
        for context in contexts {
            let loop = context.value.loop
            loop.execute {
                var snapshot = context.value.metrics
                snapshot.poolIdle = context.value.pool.idleCount
                snapshot.loopTurns = loop.turnDurations
                let finished = remaining.withLock { state -> LoopMetrics? in
                    state.total.add(snapshot)
                    state.count -= 1
                    return state.count == 0 ? state.total : nil
                }
                if let finished { home.execute { done.value(finished) } }
            }
        }
    }
}
