import BearerCore
import BearerHTTP

/// The hosts CONNECTs were tunnelled to as they are, so that the first tunnel to each says so.
///
/// A client that sends `CONNECT localhost:9103` when inject_hosts names `127.0.0.1:9103` gets a byte
/// tunnel: it sees the API's own certificate and a 401, and nothing tells it why. The first tunnel
/// to each host:port (per process) is logged with the inject hosts it missed. Only tunnelled
/// CONNECTs ask, one uncontended lock each; plain requests never do.
final class TunnelledHosts: Sendable {
    /// How many host:port pairs are remembered (under 300 KiB, even with 255-byte names). Past it, a
    /// host not seen yet is neither remembered nor logged: a proxy that tunnels to that many hosts is
    /// a general forward proxy, whose user the first 1,024 lines already told what they had to.
    static let capacity = 1_024

    /// Every session's inject hosts, as the line names them: `api.example.com, *.example.org`, or
    /// with named sessions `default: api.example.com; github: api.github.com`.
    let injectHosts: String
    private let seen = Locked<Set<Origin>>([])

    /// `sessions`: the default session first, then the named ones.
    init(sessions: [NamedSession]) {
        let lists = sessions.compactMap { session -> (name: String, hosts: String)? in
            let patterns = session.settings.effectiveInjectHosts
            if patterns.isEmpty { return nil }
            return (session.name, patterns.map(\.description).joined(separator: ", "))
        }
        self.injectHosts =
            switch (sessions.count, lists.count) {
            case (_, 0): "(none)"
            case (1, _): lists[0].hosts
            default: lists.map { "\($0.name): \($0.hosts)" }.joined(separator: "; ")
            }
    }

    /// Whether this is the first tunnel to `origin` (which is now remembered, room permitting).
    func isFirstTunnel(to origin: Origin) -> Bool {
        self.seen.withLock { seen in
            seen.count < Self.capacity && seen.insert(origin).inserted
        }
    }
}
