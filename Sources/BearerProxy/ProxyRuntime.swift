import BearerCore
import BearerIO
import Synchronization

/// What every connection of a running proxy shares: configuration, routes, the token session.
package final class ProxyRuntime: Sendable {
    package let configuration: Configuration
    package let router: Router
    package let session: TokenSession
    package let resolver: Resolver
    package let logger: Logger
    package let openConnections = Atomic<Int>(0)

    package init(configuration: Configuration, router: Router, session: TokenSession, resolver: Resolver, logger: Logger) {
        self.configuration = configuration
        self.router = router
        self.session = session
        self.resolver = resolver
        self.logger = logger
    }
}

/// What the connections of one event loop share: the loop, its upstream pool.
/// Confined to its loop.
final class LoopContext {
    unowned let loop: EventLoop
    let runtime: ProxyRuntime
    let pool = UpstreamPool()
    /// Client connections open on this loop, for shutdown.
    var clients: [ObjectIdentifier: ClientConnection] = [:]

    init(loop: EventLoop, runtime: ProxyRuntime) {
        self.loop = loop
        self.runtime = runtime
    }
}

@available(*, unavailable)
extension LoopContext: Sendable {}
