import BearerCore
import BearerHTTP
import BearerSession

/// Everything the proxy answers on its own, with the status and the one-line body the client reads.
///
/// Bodies name what failed and what to do; they never contain a token or secret. `shortName` is a
/// bounded label for logs and metrics.
package enum ProxyError: Error, Equatable, Sendable {
    case malformedRequest(HTTPParseError)
    case otherHostDenied(String)
    /// An origin-form request whose Host the proxy does not answer to (DNS rebinding defence).
    case hostRefused(String)
    /// A browser request from another site.
    case originRefused(String)
    /// CONNECT to an inject host on 443 with tls_intercept off: the token cannot be added inside TLS.
    case connectToInjectHostOverTLS(String)
    /// CONNECT to a host not in inject_hosts with other_hosts = deny.
    case connectDenied(String)
    /// A request a session's `allow` or `deny` refuses: the request line as judged, and the rule.
    case notAllowed(request: String, session: NamedSession, rule: String)
    case upstreamConnectFailed(origin: String, reason: String)
    case upstreamResolveFailed(origin: String, reason: String)
    case upstreamClosed(origin: String)
    case upstreamReset(origin: String)
    case upstreamMalformed(origin: String, HTTPParseError)
    case upstreamConnectTimeout(origin: String)
    case upstreamTimeout(origin: String)
    case upstreamTLSFailed(origin: String, reason: String)
    /// A gRPC call towards an upstream spoken to in HTTP/1.1, which cannot carry it.
    case grpcNeedsHTTP2(origin: String)
    case requestHeadTimeout
    case requestBodyTimeout
    case overCapacity
    /// An origin-form path no mount matches, with no default upstream; the mounts there are.
    case noSessionForPath(mounts: String)
    /// A request that needed a token cannot have one (refresh failed, logged out, …).
    case session(SessionFailure)

    /// An outbound connection to `origin` that could not be made.
    init(_ error: OutboundError, origin: Origin) {
        let name = origin.description
        switch error {
        case .resolveFailed(let reason): self = .upstreamResolveFailed(origin: name, reason: reason)
        case .connectFailed(let reason): self = .upstreamConnectFailed(origin: name, reason: reason)
        case .timedOut: self = .upstreamConnectTimeout(origin: name)
        case .tlsUnavailable, .tlsFailed: self = .upstreamTLSFailed(origin: name, reason: error.reason)
        }
    }

    package var status: Int {
        switch self {
        case .malformedRequest(let error): error.status
        case .otherHostDenied, .hostRefused, .originRefused, .notAllowed: 403
        case .connectToInjectHostOverTLS, .connectDenied: 405
        case .upstreamConnectFailed, .upstreamResolveFailed, .upstreamClosed, .upstreamReset, .upstreamMalformed,
            .upstreamTLSFailed, .grpcNeedsHTTP2:
            502
        case .upstreamConnectTimeout, .upstreamTimeout: 504
        case .requestHeadTimeout, .requestBodyTimeout: 408
        case .overCapacity: 503
        case .noSessionForPath: 404
        case .session(let failure): failure.status
        }
    }

    /// Fields added to the response (Retry-After when the token endpoint asked to wait).
    package var extraFields: [(String, String)] {
        if case .session(let failure) = self { return failure.extraFields }
        return []
    }

    package var message: String {
        switch self {
        case .malformedRequest(let error):
            "bearer-proxy: bad request: \(error.message)"
        case .otherHostDenied(let origin):
            "bearer-proxy: requests to \(origin) are refused (other_hosts = deny and it is not in inject_hosts)"
        case .notAllowed(let request, let session, let rule):
            "bearer-proxy: \(request) is not allowed for session \(session.name) (\(rule))"
        case .hostRefused(let host):
            "bearer-proxy: Host '\(oneLine(host, limit: 100))' is not one this proxy answers to; add it to accept_hosts if you trust it"
        case .originRefused(let origin):
            "bearer-proxy: browser requests from \(origin) are refused; add the origin to accept_origins to allow it"
        case .connectToInjectHostOverTLS(let origin), .connectDenied(let origin):
            // The reason is the one the log gives (connectRefusal is set for exactly these two).
            "bearer-proxy: CONNECT \(origin) refused: \(self.connectRefusal!.reason)"
        case .upstreamConnectFailed(let origin, let reason):
            "bearer-proxy: cannot connect to upstream \(origin): \(reason)"
        case .upstreamResolveFailed(let origin, let reason):
            "bearer-proxy: cannot resolve upstream \(origin): \(reason)"
        case .upstreamClosed(let origin):
            "bearer-proxy: upstream \(origin) closed the connection before answering"
        case .upstreamReset(let origin):
            "bearer-proxy: upstream \(origin) reset the connection"
        case .upstreamMalformed(let origin, let error):
            "bearer-proxy: upstream \(origin) sent a malformed response: \(error.message)"
        case .upstreamConnectTimeout(let origin):
            "bearer-proxy: connecting to upstream \(origin) timed out (upstream_connect_timeout)"
        case .upstreamTimeout(let origin):
            "bearer-proxy: upstream \(origin) did not answer in time (upstream_timeout)"
        case .upstreamTLSFailed(let origin, let reason):
            "bearer-proxy: TLS to upstream \(origin) failed: \(reason)"
        case .grpcNeedsHTTP2(let origin):
            "bearer-proxy: a gRPC call needs HTTP/2, and upstream \(origin) is spoken to in HTTP/1.1 (upstream_http2 = off, or its TLS chose http/1.1); set upstream_http2 = on for an h2c upstream, auto or on for TLS"
        case .requestHeadTimeout:
            "bearer-proxy: request head not received in time (client_header_timeout)"
        case .requestBodyTimeout:
            "bearer-proxy: the request body stopped arriving (client_idle_timeout)"
        case .overCapacity:
            "bearer-proxy: too many connections (max_connections); try again later"
        case .noSessionForPath(let mounts):
            "bearer-proxy: no session takes this path: it is under none of the mounts (\(mounts)) and the default session has no upstream"
        case .session(let failure):
            failure.message
        }
    }

    /// A refused CONNECT's target and the reason its 405 body gives; nil for every other error. The
    /// proxy logs it too: curl, urllib and requests do not show the body of an answer to a CONNECT.
    package var connectRefusal: (target: String, reason: String)? {
        switch self {
        case .connectToInjectHostOverTLS(let origin):
            (
                origin,
                "inside a TLS tunnel the proxy cannot add the token unless tls_intercept = on (clients then trust its CA, see bearer-proxy ca); or send plain http:// requests to the proxy (it speaks HTTPS to the upstream itself)"
            )
        case .connectDenied(let origin):
            (origin, "other_hosts = deny and it is not in inject_hosts")
        case .malformedRequest, .otherHostDenied, .notAllowed, .hostRefused, .originRefused, .upstreamConnectFailed,
            .upstreamResolveFailed, .upstreamClosed, .upstreamReset, .upstreamMalformed, .upstreamConnectTimeout,
            .upstreamTimeout, .upstreamTLSFailed, .grpcNeedsHTTP2, .requestHeadTimeout, .requestBodyTimeout,
            .overCapacity,
            .noSessionForPath, .session:
            nil
        }
    }

    /// A bounded label for logs and metrics.
    package var shortName: String {
        switch self {
        case .malformedRequest: "malformed_request"
        case .otherHostDenied: "other_host_denied"
        case .notAllowed: "not_allowed"
        case .hostRefused: "host_refused"
        case .originRefused: "origin_refused"
        case .connectToInjectHostOverTLS: "connect_tls_to_inject_host"
        case .connectDenied: "connect_denied"
        case .upstreamConnectFailed: "upstream_connect_failed"
        case .upstreamResolveFailed: "upstream_resolve_failed"
        case .upstreamClosed: "upstream_closed"
        case .upstreamReset: "upstream_reset"
        case .upstreamMalformed: "upstream_malformed"
        case .upstreamConnectTimeout: "upstream_connect_timeout"
        case .upstreamTimeout: "upstream_timeout"
        case .upstreamTLSFailed: "upstream_tls_failed"
        case .grpcNeedsHTTP2: "grpc_needs_http2"
        case .requestHeadTimeout: "request_head_timeout"
        case .requestBodyTimeout: "request_body_timeout"
        case .overCapacity: "over_capacity"
        case .noSessionForPath: "no_session_for_path"
        case .session(let failure): "token_\(failure.shortName)"
        }
    }
}
