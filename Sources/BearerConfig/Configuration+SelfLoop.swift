import BearerHTTP
import BearerIO

/// An upstream that leads back to the session it serves: every request would come back to the proxy,
/// gain a token and a `Via` line, and go round until its head is too large, with the token on every
/// hop. Caught here, where the mistake is, rather than as a 431 that seems to blame the client. A
/// chain that ends (one session's upstream is another's listener, whose upstream is the API) is not
/// a loop and is left alone.
extension Configuration {
    func validateNoSelfLoop(into diagnostics: inout ConfigurationDiagnostics) {
        let sessions = self.sessions
        // A mistyped listen, mount or upstream line was reported there; the default it leaves would mislead.
        let hasFailedLine = sessions.indices.contains { index in
            diagnostics.hasFailedLine(of: [.listen, .mount, .upstream], in: index == 0 ? nil : sessions[index].name)
        }
        guard !hasFailedLine else { return }
        for start in sessions.indices {
            guard let (firstHop, through) = Self.hop(from: start, in: sessions) else { continue }
            var visited = [start]
            var current = firstHop
            while current != start, !visited.contains(current) {
                visited.append(current)
                guard let (next, _) = Self.hop(from: current, in: sessions) else { break }
                current = next
            }
            guard current == start, let upstream = sessions[start].upstream else { continue }
            let back = firstHop == start ? "" : ", whose \(Key.upstream) leads back here"
            diagnostics.error(
                at: self.place(of: .upstream, in: sessions[start]),
                .upstream,
                "\(upstream) is this proxy's own listener (\(through)\(back)): every request would come back to it (point \(Key.upstream) at the API)"
            )
        }
    }

    /// The session a request sent to `sessions[index]`'s upstream lands in, if that is one of this
    /// proxy's listeners, and how (`listen = …`, its session, the mount its path selects).
    private static func hop(from index: Int, in sessions: [SessionSettings]) -> (Int, String)? {
        // An https upstream on a listener of this proxy fails its handshake: an error, not a loop.
        guard let upstream = sessions[index].upstream, !upstream.isHTTPS else { return nil }
        for (owner, session) in sessions.enumerated() {
            guard let address = session.listen.first(where: { Self.reaches(upstream, $0) }) else {
                continue
            }
            guard owner == 0 else { return (owner, "\(Key.listen) = \(address) of [session \(session.name)]") }
            // The main listener: the longest mount taking the path selects a named session, segment-wise,
            // as `SessionTable.mount(of:_:)` routes a request; else the default session.
            let path = upstream.pathPrefix
            let mountLength = { (candidate: Int) -> Int in
                guard let mount = sessions[candidate].mount,
                    path == mount || path.hasPrefix(mount + "/")
                else { return -1 }
                return mount.count
            }
            if let mounted = sessions.indices.dropFirst().max(by: { mountLength($0) < mountLength($1) }),
                mountLength(mounted) >= 0
            {
                return (mounted, "\(Key.listen) = \(address), \(Key.mount) = \(sessions[mounted].mount ?? "")")
            }
            return (0, "\(Key.listen) = \(address)")
        }
        return nil
    }

    /// Whether a connection to `upstream` lands on `listener`. An address: the same one, or a loopback
    /// address of the family whose wildcard the listener is (an IPv6 listener takes no IPv4). A name:
    /// itself, or a loopback name for any loopback or wildcard listener, since it may resolve to either.
    private static func reaches(_ upstream: HTTPURL, _ listener: ListenAddressSpec) -> Bool {
        guard case .hostPort(let host, let port) = listener, port != 0, port == upstream.port else { return false }
        let listenHost = host.lowercased()
        let wildcardLoopback = ListenAddressSpec.loopback(reachingWildcard: listenHost)
        if let address = SocketAddress(ipAddress: upstream.host, port: port) {
            if SocketAddress(ipAddress: listenHost, port: port) == address { return true }
            guard let wildcardLoopback, let loopback = SocketAddress(ipAddress: wildcardLoopback, port: port) else {
                return false
            }
            switch (loopback, address) {
            case (.ipv4, .ipv4): return upstream.host.hasPrefix("127.")
            case (.ipv6, .ipv6): return loopback == address
            default: return false
            }
        }
        if listenHost == upstream.host { return true }
        return Self.isLoopback(upstream.host) && (Self.isLoopback(listenHost) || wildcardLoopback != nil)
    }
}
