import BearerHTTP

/// Which session a request is for (docs/sessions.md, "Several APIs in one proxy"): host, listener or mount →
/// session, built once at start.
///
/// Choosing is a byte comparison over a small table, once per request: an origin-form request on a
/// session's own listener is that session's; on the main listener, the longest mount its path starts
/// with, segment-wise, else the default session's. An absolute-form request or a CONNECT is the
/// session's whose inject_hosts match its host (the config refuses two sessions that could both
/// match one). A class, immutable: the router reads it for every request.
final class SessionTable: Sendable {
    /// A session with an upstream, and the targets its requests use.
    struct Upstream: Sendable {
        let session: NamedSession
        let url: HTTPURL
        let host: EncodedHost
        /// Origin-form requests: the upstream, with its path prefix.
        let originForm: Target
        /// Absolute-form requests to the upstream's host: the upstream, without its path prefix.
        let absoluteForm: Target
    }

    /// A mount on the main listener: the session's origin-form target under a path prefix.
    struct Mount: Sendable {
        let prefix: [UInt8]
        let target: Target
    }

    /// By session index; nil for a session without upstream.
    private let upstreamsByIndex: [Upstream?]
    /// Every session with an upstream, in table order (the default session first).
    let upstreams: [Upstream]
    /// Longest first: the first that matches is the longest.
    private let mounts: [Mount]
    /// Each session's inject_hosts, in table order.
    private let injectHosts: [(patterns: [HostPattern], session: NamedSession)]
    /// Where origin-form requests on the main listener that no mount takes go; nil: nowhere (404).
    let defaultTarget: Target?
    /// `/github, /shop`, for the 404 of a path no session takes.
    let mountList: String

    /// `sessions`: the default session first (index 0), then the named ones.
    init(sessions: [NamedSession]) {
        let injectHosts = sessions.map { ($0.settings.effectiveInjectHosts, $0) }
        self.injectHosts = injectHosts
        func session(forHost host: String, port: Int) -> NamedSession? {
            injectHosts.first { patterns, _ in patterns.contains { $0.matches(host: host, port: port) } }?.1
        }
        var upstreams: [Upstream?] = []
        for named in sessions {
            guard let url = named.settings.upstream else {
                upstreams.append(nil)
                continue
            }
            let origin = url.origin
            let authority = Array(origin.authority.utf8)
            // Origin-form requests are the session's; its token goes with them only to its own inject hosts.
            let injects = named.settings.effectiveInjectHosts.contains {
                $0.matches(host: url.host, port: url.port)
            }
            let originForm = Target(
                origin: origin,
                authority: authority,
                pathPrefix: Array(url.pathPrefix.utf8),
                session: named,
                injectsToken: injects
            )
            let owner = session(forHost: url.host, port: url.port)
            let absoluteForm = Target(
                origin: origin,
                authority: authority,
                pathPrefix: [],
                session: owner,
                injectsToken: owner != nil
            )
            upstreams.append(
                Upstream(
                    session: named,
                    url: url,
                    host: EncodedHost(url.host),
                    originForm: originForm,
                    absoluteForm: absoluteForm
                )
            )
        }
        self.upstreamsByIndex = upstreams
        self.upstreams = upstreams.compactMap(\.self)
        var mounts: [Mount] = []
        for named in sessions {
            guard let mount = named.settings.mount, let upstream = upstreams[named.index] else { continue }
            mounts.append(Mount(prefix: Array(mount.utf8), target: upstream.originForm))
        }
        self.mounts = mounts.sorted { $0.prefix.count > $1.prefix.count }
        self.defaultTarget = upstreams[0]?.originForm
        self.mountList = sessions.compactMap(\.settings.mount).joined(separator: ", ")
    }

    /// The origin-form target of `session` (one with its own listener); nil when it has no upstream.
    func originFormTarget(of session: NamedSession) -> Target? {
        self.upstreamsByIndex[session.index]?.originForm
    }

    /// The mount `raw[path]` is under, segment-wise (`/api` takes `/api`, `/api/x` and `/api?q`, never
    /// `/apiv2`), and where the rest of the path starts; nil when none takes it.
    func mount(of raw: UnsafeRawBufferPointer, _ path: Range<Int>) -> (target: Target, rest: Range<Int>)? {
        for mount in self.mounts where path.count >= mount.prefix.count {
            let end = path.lowerBound + mount.prefix.count
            guard end == path.upperBound || raw[end] == UInt8(ascii: "/") || raw[end] == UInt8(ascii: "?") else {
                continue
            }
            var index = path.lowerBound
            var matches = true
            for byte in mount.prefix {
                if raw[index] != byte {
                    matches = false
                    break
                }
                index += 1
            }
            if matches { return (mount.target, end..<path.upperBound) }
        }
        return nil
    }

    /// Whether any session mounts a path.
    var hasMounts: Bool { !self.mounts.isEmpty }

    /// The session whose inject_hosts match `host` (lower-cased, without brackets) on `port`.
    func session(forHost host: String, port: Int) -> NamedSession? {
        for (patterns, session) in self.injectHosts
        where patterns.contains(where: { $0.matches(host: host, port: port) }) {
            return session
        }
        return nil
    }

    /// The upstream whose host is `host` and port `namedPort` (or any, when the client named none).
    func upstream(host: String, namedPort: Int?) -> Upstream? {
        self.upstreams.first { $0.url.host == host && (namedPort == nil || namedPort == $0.url.port) }
    }
}
