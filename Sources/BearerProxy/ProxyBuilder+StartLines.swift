import BearerConfig
import BearerCore
import BearerSession

/// The lines a start logs once the proxy accepts.
extension ProxyBuilder {
    /// One line with the effective settings (nothing secret), for whoever reads the log later, and
    /// with named sessions one more for each of them. Without a default session
    /// (`Configuration.hasDefaultSession`) the first line names the sessions where the default one's
    /// settings were (upstream, inject_hosts, tokens, refresh_on, tls_client_cert, its fleet key):
    /// settings of no session would read as a session with no upstream and no token.
    static func logStart(of server: ProxyServer) {
        let runtime = server.runtime
        let process = runtime.configuration.process
        let workers = "\(process.workers)"
        let io = server.usesIOUring ? "io_uring" : "epoll"
        let admin = server.adminAddress?.description ?? "off"
        let tlsVerify = process.tlsInsecureSkipVerify ? "OFF" : "on"
        let store = process.sessionStore
        if runtime.configuration.hasDefaultSession {
            let settings = runtime.sessions[0].settings
            runtime.logger.info(
                "starting",
                [
                    "version": bearerProxyVersion,
                    "upstream": settings.upstream?.description ?? "-",
                    "inject_hosts": settings.effectiveInjectHosts.map(\.description).joined(separator: ","),
                    "other_hosts": process.otherHosts.rawValue,
                    "tokens": Self.tokens(of: runtime.sessions[0]),
                    "credential_store": Self.credentialStore(of: runtime.sessions[0]),
                    "refresh_on": settings.refreshOnDescription,
                    "workers": workers, "io": io, "admin": admin, "access_log": process.accessLog.description,
                    "tls_verify": tlsVerify,
                    "tls_client_cert": settings.credentials.found.certificate?.subject ?? "none",
                    "session_store": store.endpoint.map {
                        "\($0) session=\(settings.sessionName) fallback=\(store.fallback.rawValue)"
                    } ?? "off",
                ]
            )
        } else {
            runtime.logger.info(
                "starting",
                [
                    "version": bearerProxyVersion,
                    "sessions": runtime.shownSessions.map(\.name).joined(separator: ","),
                    "other_hosts": process.otherHosts.rawValue,
                    "workers": workers, "io": io, "admin": admin, "access_log": process.accessLog.description,
                    "tls_verify": tlsVerify,
                    "session_store": store.endpoint.map { "\($0) fallback=\(store.fallback.rawValue)" } ?? "off",
                ]
            )
        }
        for session in runtime.sessions.dropFirst() {
            let settings = session.settings
            runtime.logger.info(
                "session",
                [
                    "session": session.name,
                    "upstream": settings.upstream?.description ?? "-",
                    "mount": settings.mount ?? "-",
                    "listen": settings.listen.isEmpty ? "-" : settings.listen.map(\.description).joined(separator: ","),
                    "inject_hosts": settings.effectiveInjectHosts.map(\.description).joined(separator: ","),
                    "tokens": Self.tokens(of: session),
                    "credential_store": Self.credentialStore(of: session),
                    "refresh_on": settings.refreshOnDescription,
                    "tls_client_cert": settings.credentials.found.certificate?.subject ?? "none",
                    "session_store": store.endpoint == nil ? "off" : "session=\(settings.sessionName)",
                ]
            )
        }
    }

    /// What each session's `issuer` filled, and from which document: one line each.
    static func logDiscovery(of server: ProxyServer) {
        for session in server.runtime.sessions {
            guard let discovered = session.settings.discovered else { continue }
            server.runtime.logger.info(
                "endpoints discovered",
                [
                    "session": session.name, "from": discovered.source,
                    "keys": discovered.keys.sorted().joined(separator: ","),
                ]
            )
        }
    }

    /// Where a session's tokens come from, for the start-up lines.
    /// Where the refresh token is kept and why (`CredentialStoreChoice.summary`); `-` when the session
    /// spends none.
    private static func credentialStore(of session: NamedSession) -> String {
        guard session.settings.effectiveGrantType == .refreshToken, let store = session.tokens.store else { return "-" }
        return store.origin
    }

    private static func tokens(of session: NamedSession) -> String {
        let settings = session.settings
        guard let source = session.tokens.source else {
            return settings.accessToken == nil ? "none" : "static access_token"
        }
        switch (settings.tokenFormat, settings.tokenURL) {
        case (.json, _): return "json backend: \(source.logDescription)"
        case (.form, .some):
            return "\(settings.effectiveGrantType.rawValue) at \(source.logDescription)"
                + settings.signingSummary
        case (.form, .none): return "token_command \(source.logDescription)"
        }
    }
}
