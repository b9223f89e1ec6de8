import BearerIO

/// An upstream that is one of the proxy's own listeners: every request would come back to the proxy,
/// gain a token and a `Via` line, and go round until its head is too large, with the token on every
/// hop. Caught here, where the mistake is, rather than as a 431 that seems to blame the client.
extension Configuration {
    func validateNoSelfLoop(into diagnostics: inout ConfigurationDiagnostics) {
        let sessions = self.everySession
        let listeners = sessions.flatMap { session in
            session.configuration.listen.map { (address: $0, session: session) }
        }
        for session in sessions {
            guard let upstream = session.configuration.upstream else { continue }
            guard let (address, owner) = listeners.first(where: { Self.reaches(upstream, $0.address) }) else {
                continue
            }
            let whose = owner.name == session.name ? "" : " of [session \(owner.name)]"
            diagnostics.error(
                at: Self.place(of: "upstream", in: session),
                "upstream",
                "\(upstream) is this proxy's own listener (listen = \(address)\(whose)): every request would come back to it (point upstream at the API)"
            )
        }
    }

    /// Whether a connection to `upstream` lands on `listener`: the same port, and the same host, or a
    /// loopback name for a loopback or wildcard listener.
    private static func reaches(_ upstream: HTTPURL, _ listener: ListenAddressSpec) -> Bool {
        guard case .hostPort(let host, let port) = listener, port != 0, port == upstream.port else { return false }
        let listenHost = host.lowercased()
        if listenHost == upstream.host { return true }
        let isWildcard = listenHost == "0.0.0.0" || listenHost == "::"
        return Self.isLoopback(upstream.host) && (isWildcard || Self.isLoopback(listenHost))
    }
}
