import BearerCore
import BearerIO

/// Idle upstream connections of one event loop, per origin, reused most-recently-used first.
///
/// Each loop has its own pool, so leasing needs no lock. An idle connection stays registered for
/// reads: if the upstream closes it, the pool hears of it and drops it before anyone tries to use it.
/// Confined to its loop.
final class UpstreamPool {
    @exclusivity(unchecked) private var idle: [Origin: [UpstreamConnection]] = [:]
    @exclusivity(unchecked) private(set) var idleCount = 0
    /// Idle connections kept per origin; beyond this, finished connections are closed.
    let maximumIdlePerOrigin: Int

    init(maximumIdlePerOrigin: Int = 1024) {
        self.maximumIdlePerOrigin = maximumIdlePerOrigin
    }

    /// An idle open connection to `origin`, if there is one.
    func lease(_ origin: Origin) -> UpstreamConnection? {
        while let connection = self.idle[origin]?.popLast() {
            self.idleCount -= 1
            if connection.isOpen { return connection }
            connection.close()
        }
        return nil
    }

    /// Takes back a connection whose exchange finished cleanly, or closes it when the pool is full.
    func release(_ connection: UpstreamConnection) {
        connection.owner = nil
        guard connection.isOpen, (self.idle[connection.origin]?.count ?? 0) < self.maximumIdlePerOrigin else {
            connection.close()
            return
        }
        connection.stream.setReading(true)
        self.idle[connection.origin, default: []].append(connection)
        self.idleCount += 1
    }

    /// Drops an idle connection that the upstream closed or that sent unexpected bytes.
    func discard(_ connection: UpstreamConnection) {
        if var list = self.idle[connection.origin], let index = list.firstIndex(where: { $0 === connection }) {
            list.remove(at: index)
            self.idle[connection.origin] = list
            self.idleCount -= 1
        }
        connection.close()
    }

    func closeAll() {
        for (_, connections) in self.idle {
            for connection in connections { connection.close() }
        }
        self.idle.removeAll()
        self.idleCount = 0
    }
}

@available(*, unavailable)
extension UpstreamPool: Sendable {}
