import BearerCore

/// Putting TLS over a stream: the one place the connection meets TLS, and only to stack the
/// layer (`TLSTransport`) on the transport it has.
extension StreamConnection {
    /// Puts TLS over the stream (the client role, or a server that speaks TLS from the first byte):
    /// call before `start`. The handshake runs as soon as the bytes below flow, and the delegate
    /// hears `streamConnected` once it completed.
    package func useTLS(_ session: TLSConnection) {
        precondition(self.tls == nil && self.bytesSent == 0, "TLS must start before any byte")
        self.transport = .tls(TLSTransport(session: session, over: self.transport, loop: self.loop))
    }

    /// Starts TLS now, in the middle of an open stream: what is buffered to send goes out first in
    /// clear (a `200 Connection established`), and what the peer already sent (in `inbound`, unread)
    /// is the first of the handshake. The delegate hears `streamConnected` once the handshake is
    /// complete, or `streamClosed` with the TLS failure.
    package func startTLS(_ session: TLSConnection) {
        self.loop.assertInEventLoop()
        precondition(self.tls == nil, "TLS started twice")
        guard self.state == .open else { return }
        let layer = TLSTransport(session: session, over: self.transport, loop: self.loop)
        layer.takeOver(unsent: &self.outbound, unread: &self.inboundStorage)
        self.transport = .tls(layer)
        self.establish()
    }

    /// The TLS session over this stream, if there is one (its peer's certificate, ALPN, resumption).
    package var tls: TLSConnection? {
        if case .tls(let layer) = self.transport { return layer.session }
        return nil
    }
}
