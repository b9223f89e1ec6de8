import BearerCore
import BearerHTTP

/// A byte relay between the client and an upstream: a CONNECT tunnel to a host that gets no token,
/// or a WebSocket connection after the upstream's 101. Bytes pass untouched both ways, each side's
/// end (FIN) is passed on as a half-close, and the relay closes once both sides finished, either
/// closed, or nothing moved for `tunnel_idle_timeout`.
struct Relay: Equatable {
    enum Kind: Equatable {
        case connectTunnel(Origin)
        case webSocket(Origin)
    }

    let kind: Kind
    let record: ClientConnectionStateMachine.RequestRecord
    /// The upstream connection is up (a CONNECT tunnel connects first).
    var isEstablished: Bool
    var lastActivity: Instant
    var hasClientFinished = false
    var hasUpstreamFinished = false

    init(kind: Kind, record: ClientConnectionStateMachine.RequestRecord, now: Instant) {
        self.kind = kind
        self.record = record
        if case .webSocket = kind { self.isEstablished = true } else { self.isEstablished = false }
        self.lastActivity = now
    }
}

extension ClientConnectionStateMachine {
    /// The CONNECT tunnel's upstream connection is up.
    mutating func tunnelConnected(now: Instant) -> Action {
        guard case .relay(var relay) = self.state, !relay.isEstablished else {
            preconditionFailure("Invalid state for a connected tunnel: \(self.state)")
        }
        relay.isEstablished = true
        relay.lastActivity = now
        self.state = .relay(relay)
        return .writeTunnelEstablished(relay.record)
    }

    /// The CONNECT tunnel's upstream could not be reached.
    mutating func tunnelConnectFailed(_ error: ProxyError) -> Action {
        guard case .relay(let relay) = self.state, !relay.isEstablished else {
            preconditionFailure("Invalid state for a failed tunnel: \(self.state)")
        }
        self.state = .closing
        return .respond(LocalResponse(error: error, closesConnection: true, record: relay.record))
    }

    /// Bytes moved through the relay (either way): the idle deadline starts again.
    mutating func relayed(now: Instant) {
        guard case .relay(var relay) = self.state else { return }
        relay.lastActivity = now
        self.state = .relay(relay)
    }

    /// The relay's upstream sent its last byte (`closed: false`), or closed or reset.
    mutating func relayUpstreamEnded(closed: Bool) -> Action {
        guard case .relay(var relay) = self.state else { return .none }
        relay.hasUpstreamFinished = true
        if closed || relay.hasClientFinished {
            self.state = .closed
            return .close(.relayEnded)
        }
        self.state = .relay(relay)
        return .shutDownClientWrite
    }
}
