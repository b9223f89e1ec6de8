import BearerCore
import BearerIO

/// A CONNECT tunnel to an inject host, served by the proxy itself: the first bytes inside decide
/// between HTTP in clear and TLS, and TLS is terminated (tls_intercept) with a certificate for the
/// CONNECT host, after which the requests inside are ordinary requests to the https target.
extension ClientConnectionStateMachine {
    /// The first bytes inside a served tunnel arrived: a TLS ClientHello (`startsTLS`) or not.
    mutating func servedTunnelReceivedFirstBytes(startsTLS: Bool, now: Instant) -> Action {
        guard case .servedTunnelOpened(let tunnel, _) = self.state else { return .none }
        if startsTLS {
            guard let target = tunnel.tls else {
                self.state = .closed
                return .close(.tlsInsideServedTunnel(tunnel.clear?.origin))
            }
            self.servedTunnelTarget = target
            self.state = .tlsHandshake(host: tunnel.host, since: now)
            return .startTLS(host: tunnel.host)
        }
        guard let target = tunnel.clear else {
            self.state = .closed
            return .close(.clearTextInsideInterceptedTunnel(tunnel.tls?.origin))
        }
        self.servedTunnelTarget = target
        self.state = .idle(since: now)
        return .none
    }

    /// The client's TLS handshake completed: requests follow, inside TLS.
    mutating func tlsEstablished(now: Instant) -> Action {
        guard case .tlsHandshake = self.state else { return .none }
        self.state = .idle(since: now)
        return .countInterceptedTunnel
    }

    /// No certificate could be had for the tunnel's host: nothing to offer the client's TLS.
    mutating func serverCertificateUnavailable(_ reason: String) -> Action {
        guard case .tlsHandshake(let host, _) = self.state else { return .none }
        self.state = .closed
        return .close(.interceptCertificateUnavailable(host: host, reason: reason))
    }
}
