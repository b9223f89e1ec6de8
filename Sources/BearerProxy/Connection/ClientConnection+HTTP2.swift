import BearerCore
import BearerHTTP2

/// The choice between HTTP/1.1 and HTTP/2 with prior knowledge (RFC 9113 §3.3), made once on a
/// connection's first bytes; inside an intercepted tunnel, ALPN made it (`streamConnected`).
extension ClientConnection {
    /// Compares the client's first bytes with the preface. A mismatch at any byte is HTTP/1.1, as
    /// before (a pipelined request is parsed from the same buffer); a prefix waits for more bytes
    /// (the head's deadline still runs). Returns whether to parse HTTP/1.1 now.
    func decideProtocol() -> Bool {
        let preface = HTTP2.clientPreface
        let match = self.stream.inbound.withUnsafeReadableBytes { bytes -> Bool? in
            let count = min(bytes.count, preface.count)
            guard bytes.prefix(count).elementsEqual(preface.prefix(count)) else { return false }
            return count == preface.count ? true : nil
        }
        switch match {
        case false:
            self.isProtocolDecided = true
            return true
        case nil:
            if self.stream.inbound.isEmpty { return true }  // the end, or nothing yet: the parser says which
            if self.stream.hasReadEnded {
                self.isProtocolDecided = true
                return true
            }
            self.machine.requestHeadStarted(now: self.loop.now)
            return false
        case true:
            self.isProtocolDecided = true
            guard self.runtime.configuration.process.http2 else {
                self.runtime.logger.info("refused an HTTP/2 connection preface: http2 = off serves HTTP/1.1 only")
                self.run(self.machine.requestMalformed(.invalidRequestLine))
                return false
            }
            self.startHTTP2()
            return false
        }
    }

    /// From now on the connection speaks HTTP/2: its bytes (the preface first) go to an
    /// `HTTP2Connection`, whose deadlines the connection's timer keeps from here.
    func startHTTP2() {
        self.isProtocolDecided = true
        self.cancelTimer()
        self.http2 = HTTP2Connection(owner: self)
    }
}
