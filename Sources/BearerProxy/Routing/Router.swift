import BearerHTTP
import BearerIO

/// Decides where a request goes and whether it carries the token (CONTRACT.md, "Routing").
///
/// Origin-form requests, and absolute-form requests naming the proxy itself, go to the configured
/// upstream with its path prefix. Absolute-form requests go to the host they name; when that is the
/// upstream's host (with no port or the upstream's port) the upstream's scheme and port are used, so
/// a client speaking plain HTTP to the proxy reaches an HTTPS API. The token goes only to hosts that
/// `inject_hosts` matches.
///
/// A class, immutable: every request reads it through the connections' shared rules, and reading a
/// struct of arrays out of a class copies it, a retain for each of its fields.
package final class Router: Sendable {
    package let upstream: Target
    /// Absolute-form requests to the upstream's host go here: the upstream, without its path prefix.
    private let upstreamForAbsoluteForm: Target
    private let upstreamHost: EncodedHost
    private let upstreamURL: UpstreamURL
    private let injectHosts: [HostPattern]
    private let otherHosts: OtherHostsPolicy
    /// tls_intercept: a CONNECT to an inject host may carry TLS the proxy terminates.
    private let intercepts: Bool
    /// The names that make an absolute-form request one for the proxy itself.
    private let names: ProxyNames

    package init(configuration: Configuration, upstream: UpstreamURL, names: ProxyNames) {
        self.upstreamURL = upstream
        self.injectHosts = configuration.effectiveInjectHosts
        self.otherHosts = configuration.otherHosts
        self.intercepts = configuration.intercept.isEnabled
        let origin = upstream.origin
        self.upstream = Target(
            origin: origin,
            authority: Array(origin.authority.utf8),
            pathPrefix: Array(upstream.pathPrefix.utf8),
            injectsToken: self.injectHosts.contains { $0.matches(host: upstream.host, port: upstream.port) }
        )
        self.upstreamForAbsoluteForm = Target(
            origin: origin,
            authority: self.upstream.authority,
            pathPrefix: [],
            injectsToken: self.upstream.injectsToken
        )
        self.upstreamHost = EncodedHost(upstream.host)
        self.names = names
    }

    package func route(_ head: RequestHead) -> Route {
        switch head.targetForm {
        case .origin:
            return .forward(self.upstream, path: .prefixed(head.target))
        case .asterisk:
            return .forward(self.upstream, path: .asterisk)
        case .authority(let authority):
            let host = ProxyNames.normalizedHost(head.string(authority.host))
            let port = authority.port ?? 443
            let origin = Origin(isHTTPS: false, host: host, port: port)
            if self.injectHosts.contains(where: { $0.matches(host: host, port: port) }) {
                return self.servedTunnel(host: host, port: port, namedPort: authority.port)
            }
            if self.otherHosts == .deny { return .reject(.connectDenied(origin.description)) }
            return .tunnel(origin)
        case .absolute(let absolute):
            let authority = absolute.parsedAuthority
            if self.names.contains(authority, in: head, defaultPort: absolute.isHTTPS ? 443 : 80) {
                return .forward(self.upstream, path: .prefixed(absolute.pathAndQuery))
            }
            // What http_proxy clients send for the API itself: the shared target, no string built.
            let namesUpstreamPort = authority.port == nil || authority.port == self.upstreamURL.port
            if namesUpstreamPort && head.bytes.withUnsafeBytes({ self.upstreamHost.isSpelled(by: $0, authority.host) })
            {
                return .forward(self.upstreamForAbsoluteForm, path: .absolute(absolute.pathAndQuery))
            }
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

    /// Where requests to `host:port` go: the upstream's scheme and port when it is the upstream's
    /// host named without a port or with the upstream's port, else the scheme the client named.
    func target(host: String, port: Int, namedPort: Int?, isHTTPS: Bool) -> Target {
        let origin: Origin
        if host == self.upstreamURL.host && (namedPort == nil || namedPort == self.upstreamURL.port) {
            origin = self.upstream.origin
        } else {
            origin = Origin(isHTTPS: isHTTPS, host: host, port: port)
        }
        return Target(
            origin: origin,
            authority: origin == self.upstream.origin ? self.upstream.authority : Array(origin.authority.utf8),
            pathPrefix: [],
            injectsToken: self.injectHosts.contains { $0.matches(host: origin.host, port: origin.port) }
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
    package let injectsToken: Bool
    /// `host:port`, for the access log.
    let logName: [UInt8]

    package init(origin: Origin, authority: [UInt8], pathPrefix: [UInt8], injectsToken: Bool) {
        self.origin = origin
        self.authority = authority
        self.pathPrefix = pathPrefix
        self.injectsToken = injectsToken
        self.logName = Array(origin.description.utf8)
    }

    package static func == (lhs: Target, rhs: Target) -> Bool {
        lhs === rhs
            || (lhs.origin == rhs.origin && lhs.authority == rhs.authority && lhs.pathPrefix == rhs.pathPrefix
                && lhs.injectsToken == rhs.injectsToken)
    }

    package var description: String { "\(self.origin)\(self.injectsToken ? " (token)" : "")" }
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
