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
    /// The names that make an absolute-form request one for the proxy itself.
    private let names: ProxyNames

    package init(configuration: Configuration, upstream: UpstreamURL, names: ProxyNames) {
        self.upstreamURL = upstream
        self.injectHosts = configuration.effectiveInjectHosts
        self.otherHosts = configuration.otherHosts
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
                // Clients such as undici tunnel even plain http:// through CONNECT. On 443 the client
                // will speak TLS inside, where no header can be added.
                if port == 443 { return .reject(.connectToInjectHostOverTLS(origin.description)) }
                return .serveTunnel(self.target(host: host, port: port, namedPort: authority.port, isHTTPS: false))
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
            if namesUpstreamPort && head.bytes.withUnsafeBytes({ self.upstreamHost.isSpelled(by: $0, authority.host) }) {
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
    /// CONNECT to an inject host on a plain-HTTP port: the proxy answers 200 and reads the requests
    /// inside itself, adding the token, all sent to this target.
    case serveTunnel(Target)
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
