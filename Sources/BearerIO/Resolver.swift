import BearerCore
import Glibc
import Synchronization

/// Resolves host names off the event loops, with a short-lived cache.
///
/// `getaddrinfo` blocks, so it runs on Dispatch's pool and the answer is sent back to the asking loop.
/// IP literals never leave the calling thread. Answers are cached for `ttl`, because getaddrinfo does
/// not tell the record's own TTL; a failed lookup is not cached.
package final class Resolver: Sendable {
    private struct Entry {
        var addresses: [SocketAddress]
        var expiry: Instant
    }

    private let cache = Locked<[String: Entry]>([:])
    private let ttl: Duration

    package init(ttl: Duration = .seconds(30)) {
        self.ttl = ttl
    }

    package enum Answer: Sendable {
        case addresses([SocketAddress])
        case failed(String)
    }

    /// Calls `completion` on `loop` with the addresses of `host` (no brackets) at `port`.
    /// Answers from the cache or for literals come synchronously, before this returns.
    package func resolve(
        host: String,
        port: Int,
        on loop: EventLoop,
        _ completion: @escaping @Sendable (Answer) -> Void
    ) {
        if let literal = SocketAddress(ipAddress: host, port: port) {
            completion(.addresses([literal]))
            return
        }
        let key = "\(host):\(port)"
        let now = Instant.now()
        if let cached = self.cache.withLock({ $0[key] }), cached.expiry > now {
            completion(.addresses(cached.addresses))
            return
        }
        BlockingWorkPool.shared.execute {
            let answer = Self.lookUp(host: host, port: port)
            if case .addresses(let addresses) = answer {
                let entry = Entry(addresses: addresses, expiry: Instant.now() + self.ttl)
                self.cache.withLock { $0[key] = entry }
            }
            loop.execute { completion(answer) }
        }
    }

    /// A blocking lookup, for start-up and for the resolver's own threads.
    package static func lookUp(host: String, port: Int) -> Answer {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let result = getaddrinfo(host, String(port), &hints, &list)
        guard result == 0, let first = list else {
            return .failed(String(cString: gai_strerror(result)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.copyMemory(
                    from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen))
                )
            }
            if let address = SocketAddress(storage: storage), !addresses.contains(address) {
                addresses.append(address)
            }
            cursor = info.pointee.ai_next
        }
        // Prefer IPv4 first: local upstreams commonly listen on 127.0.0.1 only, and trying ::1 first
        // would cost a refused connect on every new connection.
        addresses.sort { lhs, rhs in
            if case .ipv4 = lhs, case .ipv6 = rhs { return true }
            return false
        }
        return addresses.isEmpty ? .failed("no addresses") : .addresses(addresses)
    }
}
