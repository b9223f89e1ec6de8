import BearerCore
import BearerCrypto
import BearerIO

/// Terminating the client's TLS inside an intercepted tunnel (docs/https-interception.md, "HTTPS clients"): the
/// certificate for the CONNECT host from the local CA, the handshake on the client's own stream,
/// and one log line when it fails, saying what the client must do.
extension ClientConnection {
    /// Starts the handshake with the host's certificate: at once when the CA has it cached (every
    /// tunnel to a host after its first), else once it is made, off the loops.
    func startTLS(forHost host: String) {
        guard let certificates = self.runtime.interceptCertificates else {
            preconditionFailure("Invalid state: a TLS tunnel to terminate with tls_intercept off")
        }
        if let context = certificates.cachedContext(forHost: host) {
            self.terminateTLS(with: context)
            return
        }
        certificates.context(forHost: host, on: self.loop) { result in
            switch result {
            case .success(let context):
                self.terminateTLS(with: context)
            case .failure(let error):
                self.run(self.machine.serverCertificateUnavailable(error.description))
            }
            self.pump()
        }
    }

    private func terminateTLS(with context: TLSContext) {
        // The client may have gone while its certificate was made.
        guard !self.machine.isClosed else { return }
        guard let session = context.makeConnection(serverName: nil, sessionKey: nil) else {
            self.run(self.machine.serverCertificateUnavailable("cannot start a TLS session: \(lastOpenSSLError())"))
            return
        }
        // What the client sent after the CONNECT head (its ClientHello) is the handshake's first input.
        self.stream.startTLS(session)
    }

    /// One line per failed intercepted tunnel; the handshake failures are also counted.
    func logInterceptFailure(_ reason: ClientConnectionStateMachine.CloseReason) {
        let logger = self.runtime.logger
        let root = self.runtime.interceptCertificates?.rootFile ?? "-"
        let hint = "bearer-proxy ca prints its path; bearer-proxy ca --bundle writes a bundle with it"
        switch reason {
        case .clearTextInsideInterceptedTunnel(let origin):
            logger.warn(
                "client sent something other than TLS into an intercepted tunnel; closing: a client given https_proxy speaks TLS inside a tunnel to port 443",
                ["to": origin?.description ?? "-"]
            )
            return
        case .interceptHandshakeFailed(let host, let failure):
            switch failure {
            case .certificateRefused:
                logger.warn(
                    "client refused the certificate of an intercepted tunnel: it must trust the proxy's CA (ca.pem)",
                    ["host": host, "tls": failure.description, "ca": root, "hint": hint]
                )
            case .peerClosedDuringHandshake:
                logger.warn(
                    "client closed an intercepted tunnel during the TLS handshake; a client that does not trust the proxy's CA (ca.pem) does this",
                    ["host": host, "ca": root, "hint": hint]
                )
            case .protocolVersion, .notTLS, .other:
                logger.warn(
                    "TLS handshake of an intercepted tunnel failed",
                    ["host": host, "tls": failure.description]
                )
            }
        case .interceptHandshakeTimedOut(let host):
            logger.warn(
                "TLS handshake of an intercepted tunnel did not complete in time; closing",
                ["host": host, "client_header_timeout": "\(self.runtime.configuration.clientHeaderTimeout)"]
            )
        case .interceptCertificateUnavailable(let host, let error):
            logger.warn("no certificate for an intercepted tunnel; closing", ["host": host, "error": error])
        case .idle, .tunnelIdle, .relayEnded, .clientGone, .aborted, .tlsInsideServedTunnel:
            preconditionFailure("Not an intercept failure: \(reason)")
        }
        self.context.metrics.interceptHandshakeFailures += 1
    }
}
