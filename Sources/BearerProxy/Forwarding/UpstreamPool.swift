import BearerCore
import BearerHTTP
import BearerIO

/// Idle upstream connections of one event loop, per origin, reused most-recently-used first.
///
/// Each loop has its own pool, so leasing needs no lock. An idle connection stays registered for
/// reads: if the upstream closes it, the pool hears of it and drops it before anyone tries to use it.
/// Origins are few (the upstream, a handful of absolute-form hosts), so they sit in a short array
/// searched in order: cheaper than hashing the origin's host on every lease and release.
/// Confined to its loop.
final class UpstreamPool {
    private struct Bucket {
        let origin: Origin
        var idle: [UpstreamConnection]
    }

    @exclusivity(unchecked) private var buckets: [Bucket] = []
    @exclusivity(unchecked) private(set) var idleCount = 0
    /// Idle connections kept per origin; beyond this, finished connections are closed.
    let maximumIdlePerOrigin: Int

    init(maximumIdlePerOrigin: Int = 1024) {
        self.maximumIdlePerOrigin = maximumIdlePerOrigin
    }

    private func bucketIndex(_ origin: Origin) -> Int? {
        // Ports differ more often than hosts, and compare faster. Field by field: `Origin`'s `==`,
        // from another module, is a call through its Equatable witness, and the array is retained
        // around it.
        self.buckets.firstIndex {
            $0.origin.port == origin.port && $0.origin.host == origin.host && $0.origin.isHTTPS == origin.isHTTPS
        }
    }

    /// An idle open connection to `origin`, if there is one.
    func lease(_ origin: Origin) -> UpstreamConnection? {
        guard let index = self.bucketIndex(origin) else { return nil }
        while let connection = self.buckets[index].idle.popLast() {
            self.idleCount -= 1
            if connection.isOpen { return connection }
            connection.close()
        }
        return nil
    }

    /// Takes back a connection whose exchange finished cleanly, or closes it when the pool is full.
    func release(_ connection: UpstreamConnection) {
        connection.owner = nil
        guard connection.isOpen, !connection.isHTTP2Stream else {
            connection.close()
            return
        }
        let index: Int
        if let existing = self.bucketIndex(connection.origin) {
            index = existing
        } else {
            index = self.buckets.count
            self.buckets.append(Bucket(origin: connection.origin, idle: []))
        }
        guard self.buckets[index].idle.count < self.maximumIdlePerOrigin else {
            connection.close()
            return
        }
        connection.stream.setReading(true)
        self.buckets[index].idle.append(connection)
        self.idleCount += 1
    }

    /// Drops an idle connection that the upstream closed or that sent unexpected bytes.
    func discard(_ connection: UpstreamConnection) {
        if let index = self.bucketIndex(connection.origin),
            let position = self.buckets[index].idle.firstIndex(where: { $0 === connection })
        {
            self.buckets[index].idle.remove(at: position)
            self.idleCount -= 1
        }
        connection.close()
    }

    func closeAll() {
        for bucket in self.buckets {
            for connection in bucket.idle { connection.close() }
        }
        self.buckets.removeAll()
        self.idleCount = 0
    }
}

@available(*, unavailable)
extension UpstreamPool: Sendable {}
