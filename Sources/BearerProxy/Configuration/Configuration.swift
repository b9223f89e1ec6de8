import BearerCore
import BearerIO

/// Everything the proxy is configured with, typed and validated, with the documented defaults.
package struct Configuration: Sendable {
    package var listen: [ListenAddressSpec] = [.hostPort(host: "127.0.0.1", port: 8080)]
    package var upstream: UpstreamURL?
    /// Nil means the default: the upstream's host and port.
    package var injectHosts: [HostPattern]?
    package var otherHosts: OtherHostsPolicy = .forward
    package var accessToken: Secret<String>?
    package var workers: Int = EventLoopGroup.coreCount
    package var maxHeaderBytes: Int = 64 * 1024
    package var maxConnections: Int = 10_000
    package var upstreamConnectTimeout: Duration = .seconds(5)
    package var upstreamTimeout: Duration = .seconds(60)
    package var clientHeaderTimeout: Duration = .seconds(10)
    package var clientIdleTimeout: Duration = .seconds(60)
    package var logLevel: Logger.Level = .info

    package init() {}

    /// The hosts that get the token: `inject_hosts`, or the upstream's host and port.
    package var effectiveInjectHosts: [HostPattern] {
        if let injectHosts { return injectHosts }
        guard let upstream else { return [] }
        return [.hostAndPort(upstream.host, upstream.port)]
    }
}

package enum OtherHostsPolicy: String, Equatable, Sendable {
    /// Forward absolute-form requests to other hosts, without the token.
    case forward
    /// Answer them 403.
    case deny
}
