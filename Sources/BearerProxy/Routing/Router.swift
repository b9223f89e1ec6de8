import BearerConfig
import BearerHTTP
import BearerIO

/// Decides where a request goes, for which session, and whether it carries that session's token
/// (docs/forwarding.md, "How the target is chosen" and "Several APIs in one proxy").
///
/// Origin-form requests, and absolute-form requests naming the proxy itself, go to the upstream of
/// their session (the listener's, the mount's, else the default one), with its path prefix and
/// without the mount. Absolute-form requests go to the host they name; when that is a session's
/// upstream host (with no port or the upstream's port) the upstream's scheme and port are used, so
/// a client speaking plain HTTP to the proxy reaches an HTTPS API. The token goes only to hosts
/// that a session's `inject_hosts` matches, and it is that session's token.
///
/// A class, immutable: every request reads it through the connections' shared rules, and reading a
/// struct of arrays out of a class copies it, a retain for each of its fields.
package final class Router: Sendable {
    private let sessions: SessionTable
    /// By index: the session an absolute-form request names by its own listener's port.
    private let namedSessions: [NamedSession]
    private let otherHosts: OtherHostsPolicy
    /// tls_intercept: a CONNECT to an inject host may carry TLS the proxy terminates.
    private let intercepts: Bool
    /// The names that make an absolute-form request one for the proxy itself.
    private let names: ProxyNames
    /// The hosts a CONNECT was tunnelled to as is (`Route.tunnel`): the first tunnel to each is logged.
    let tunnelledHosts: TunnelledHosts

    /// `sessions`: the default session first (index 0), then the named ones.
    package init(configuration: Configuration, sessions: [NamedSession], names: ProxyNames) {
        self.sessions = SessionTable(sessions: sessions)
        self.namedSessions = sessions
        self.otherHosts = configuration.otherHosts
        self.intercepts = configuration.intercept.isEnabled
        self.names = names
        self.tunnelledHosts = TunnelledHosts(sessions: sessions)
    }

    /// Where `head` goes. `listener`: the session whose own listener it arrived on (nil: the main one).
    package func route(_ head: RequestHead, arrivedOn listener: NamedSession? = nil) -> Route {
        switch head.targetForm {
        case .origin:
            return self.originForm(head, path: head.target, arrivedOn: listener)
        case .asterisk:
            guard let target = listener.flatMap(self.sessions.originFormTarget(of:)) ?? self.sessions.defaultTarget
            else {
                return .reject(.noSessionForPath(mounts: self.sessions.mountList))
            }
            return .forward(target, path: .asterisk)
        case .authority(let authority):
            let host = ProxyNames.normalizedHost(head.string(authority.host))
            let port = authority.port ?? 443
            let origin = Origin(isHTTPS: false, host: host, port: port)
            if self.sessions.session(forHost: host, port: port) != nil {
                return self.servedTunnel(host: host, port: port, namedPort: authority.port)
            }
            if self.otherHosts == .deny { return .reject(.connectDenied(origin.description)) }
            return .tunnel(origin)
        case .absolute(let absolute):
            let authority = absolute.parsedAuthority
            switch self.names.naming(authority, in: head, defaultPort: absolute.isHTTPS ? 443 : 80) {
            case .listener(let session):
                let named = session.map { self.namedSessions[$0] }
                return self.originForm(head, path: absolute.pathAndQuery, arrivedOn: named)
            case .acceptedHost:
                return self.originForm(head, path: absolute.pathAndQuery, arrivedOn: listener)
            case nil:
                break
            }
            // What http_proxy clients send for an API itself: the shared target, no string built.
            let upstream = head.bytes.withUnsafeBytes { raw in
                self.sessions.upstreams.first { upstream in
                    (authority.port == nil || authority.port == upstream.url.port)
                        && upstream.host.isSpelled(by: raw, authority.host)
                }
            }
            if let upstream { return .forward(upstream.absoluteForm, path: .absolute(absolute.pathAndQuery)) }
            let host = ProxyNames.normalizedHost(head.string(authority.host))
            let port = authority.port ?? (absolute.isHTTPS ? 443 : 80)
            let target = self.target(host: host, port: port, namedPort: authority.port, isHTTPS: absolute.isHTTPS)
            if !target.injectsToken && self.otherHosts == .deny {
                return .reject(.otherHostDenied(target.origin.description))
            }
            return .forward(target, path: .absolute(absolute.pathAndQuery))
        }
    }

    /// A CONNECT to an inject host. A CONNECT names no scheme, so the first byte inside says which
    /// the client speaks: TLS (0x16) is terminated with tls_intercept on, whatever the port; clear
    /// bytes are served as plain HTTP (clients such as undici tunnel even http:// through CONNECT),
    /// except on 443, where clear HTTP is nobody's intent: there the tunnel takes TLS or nothing, and
    /// without tls_intercept the CONNECT is refused at once (405) rather than closed after the 200.
    private func servedTunnel(host: String, port: Int, namedPort: Int?) -> Route {
        let clear = port == 443 ? nil : self.target(host: host, port: port, namedPort: namedPort, isHTTPS: false)
        let tls = self.intercepts ? self.target(host: host, port: port, namedPort: namedPort, isHTTPS: true) : nil
        guard clear != nil || tls != nil else {
            return .reject(.connectToInjectHostOverTLS(Origin(isHTTPS: true, host: host, port: port).description))
        }
        return .serveTunnel(ServedTunnel(host: host, clear: clear, tls: tls))
    }

    /// An origin-form path (`head.bytes[path]`): the listener's session, else the longest mount's
    /// (the mount removed), else the default session's.
    private func originForm(_ head: RequestHead, path: Range<Int>, arrivedOn listener: NamedSession?) -> Route {
        if let listener, let target = self.sessions.originFormTarget(of: listener) {
            return .forward(target, path: .prefixed(path))
        }
        if self.sessions.hasMounts,
            let (target, rest) = head.bytes.withUnsafeBytes({ self.sessions.mount(of: $0, path) })
        {
            return .forward(target, path: .prefixed(rest))
        }
        guard let target = self.sessions.defaultTarget else {
            return .reject(.noSessionForPath(mounts: self.sessions.mountList))
        }
        return .forward(target, path: .prefixed(path))
    }

    /// Where requests to `host:port` go: a session's upstream scheme and port when it is that
    /// upstream's host named without a port or with the upstream's port, else the scheme the client
    /// named; with the token of the session whose inject_hosts match.
    func target(host: String, port: Int, namedPort: Int?, isHTTPS: Bool) -> Target {
        let upstream = self.sessions.upstream(host: host, namedPort: namedPort)
        let origin = upstream?.url.origin ?? Origin(isHTTPS: isHTTPS, host: host, port: port)
        let session = self.sessions.session(forHost: origin.host, port: origin.port)
        return Target(
            origin: origin,
            authority: upstream?.absoluteForm.authority ?? Array(origin.authority.utf8),
            pathPrefix: [],
            session: session,
            injectsToken: session != nil
        )
    }
}

/// Where one request goes.
///
/// A class, immutable: the upstream's target is made once and shared by every request to it.
package final class Target: Equatable, Sendable, CustomStringConvertible {
    package let origin: Origin
    /// The `Host` value sent upstream.
    package let authority: [UInt8]
    /// Prepended to origin-form paths.
    package let pathPrefix: [UInt8]
    /// The session the request is for: its token, its refresh_on, its replay_body_limit. Nil for a
    /// host no session's inject_hosts match.
    package let session: NamedSession?
    /// Whether the request carries the session's token (its inject_hosts match the target).
    package let injectsToken: Bool
    /// `host:port`, for the access log.
    let logName: [UInt8]

    /// `injectsToken` needs a `session`.
    package init(origin: Origin, authority: [UInt8], pathPrefix: [UInt8], session: NamedSession?, injectsToken: Bool) {
        precondition(session != nil || !injectsToken, "a token without a session to take it from")
        self.origin = origin
        self.authority = authority
        self.pathPrefix = pathPrefix
        self.session = session
        self.injectsToken = injectsToken
        self.logName = Array(origin.description.utf8)
    }

    /// The session whose token the request carries.
    var tokenSession: NamedSession? { self.injectsToken ? self.session : nil }

    package static func == (lhs: Target, rhs: Target) -> Bool {
        lhs === rhs
            || (lhs.origin == rhs.origin && lhs.authority == rhs.authority && lhs.pathPrefix == rhs.pathPrefix
                && lhs.session == rhs.session && lhs.injectsToken == rhs.injectsToken)
    }

    package var description: String {
        "\(self.origin)\(self.injectsToken ? " (token)" : "")\(self.session.map { " (\($0))" } ?? "")"
    }
}

package enum Route: Sendable {
    case forward(Target, path: ForwardedPath)
    case reject(ProxyError)
    /// CONNECT to a host that gets no token: a byte tunnel.
    case tunnel(Origin)
    /// CONNECT to an inject host: the proxy answers 200 and serves the requests inside itself,
    /// adding the token.
    case serveTunnel(ServedTunnel)
}

/// A CONNECT tunnel the proxy serves itself, and what its first bytes may turn it into.
package struct ServedTunnel: Equatable, Sendable {
    /// The CONNECT target's host: the certificate the client gets names it.
    package let host: String
    /// Requests sent in clear inside go to this target; nil: the tunnel takes TLS only (port 443).
    package let clear: Target?
    /// With tls_intercept on: the client's TLS is terminated and the requests inside go to this
    /// https target; nil: TLS inside is closed with a line saying why.
    package let tls: Target?
}

/// How the request-target sent upstream is made from the client's.
package enum ForwardedPath: Equatable, Sendable {
    /// The target's path prefix, then these bytes of the request head (an origin-form path).
    case prefixed(Range<Int>)
    /// These bytes of the head (path and query of an absolute-form target); `/` is added when empty.
    case absolute(Range<Int>)
    /// `*` (OPTIONS).
    case asterisk
}
