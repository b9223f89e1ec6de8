import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// A plain blocking HTTP/1.1 client for tests: raw bytes out, parsed responses in, with timeouts.
package final class BlockingHTTPClient {
    package let fd: Int32
    /// TLS over the socket once `startTLS` ran (OpenSSL's own socket BIO: independent of the
    /// proxy's TLS code).
    var tls: BlockingTLS?
    private var reader = HTTPResponseReader()
    package private(set) var peerClosed = false

    package struct Response: Sendable {
        package var head: ResponseHead
        package var body: [UInt8]
        /// Statuses of 1xx heads that came before this response.
        package var informational: [Int]

        package var status: Int { self.head.status }
        package var text: String { String(decoding: self.body, as: UTF8.self) }
        package func header(_ name: String) -> String? { self.head.value(of: name) }
    }

    package enum ClientError: Error, Equatable {
        case connectFailed(Int32)
        case timedOut
        case closedBeforeResponse
        case truncated(received: Int)
        case malformed(HTTPParseError)
        /// The TLS handshake failed (OpenSSL's words).
        case tlsFailed(String)
    }

    package init(connectingTo address: SocketAddress, timeout: Duration = .seconds(15)) throws(ClientError) {
        self.fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let seconds = Int(timeout.nanoseconds / 1_000_000_000)
        var value = timeval(tv_sec: seconds, tv_usec: Int((timeout.nanoseconds % 1_000_000_000) / 1000))
        setsockopt(self.fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(self.fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        let result = address.withSockAddr { Glibc.connect(self.fd, $0, $1) }
        // No close here: every stored property is set, so a throw runs deinit, which closes the
        // socket. A second close would close whatever another test's thread opened under the
        // same number meanwhile (a listener, a pipe), failing that test instead.
        if result != 0 { throw .connectFailed(errno) }
    }

    deinit {
        Glibc.close(self.fd)
    }

    package func send(_ bytes: [UInt8]) {
        if let tls = self.tls {
            tls.write(bytes)
            return
        }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return }
            offset += sent
        }
    }

    package func send(_ text: String) {
        self.send(Array(text.utf8))
    }

    package func shutdownWrite() {
        Glibc.shutdown(self.fd, Int32(SHUT_WR))
    }

    /// Closes with a reset (RST) instead of a FIN.
    package func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(self.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.shutdown(self.fd, Int32(SHUT_RDWR))
    }

    /// Reads more bytes into `pending`; false at end of stream or timeout.
    private func fill(_ pending: inout ByteBuffer) throws(ClientError) -> Bool {
        var failure: Int32 = 0
        let count = pending.writeWithUnsafeMutableBytes(minimumWritable: 256 * 1024) { tail in
            let count = self.tls?.read(into: tail) ?? Glibc.read(self.fd, tail.baseAddress, tail.count)
            if count < 0 { failure = errno }
            return max(count, 0)
        }
        if count > 0 { return true }
        if failure == EAGAIN || failure == EWOULDBLOCK { throw .timedOut }
        self.peerClosed = true
        return false
    }

    /// Reads one whole response (after any 1xx heads) to a request with `method`.
    package func readResponse(
        method: HTTPMethod = .get,
        maximumBodyBytes: Int = 256 << 20
    ) throws(ClientError) -> Response {
        try self.reader.readResponse(method: method, maximumBodyBytes: maximumBodyBytes, fill: self.fill)
    }

    /// Reads the next 1xx head only (to see `100 Continue` before sending a body).
    package func readInformational() throws(ClientError) -> Int {
        try self.readHead().status
    }

    /// Reads the next response head, 1xx included (a `101 Switching Protocols`), leaving what follows
    /// it buffered (`takeBuffered`).
    package func readHead() throws(ClientError) -> ResponseHead {
        try self.reader.readHead(fill: self.fill)
    }

    /// The bytes read but not parsed yet (after a 101: the first bytes of the new protocol).
    package func takeBuffered() -> [UInt8] {
        self.reader.takeBuffered()
    }

    /// Whatever one read returns; nil at the end of the stream or on timeout.
    package func readSome() -> [UInt8]? {
        guard (try? self.fill(&self.reader.pending)) == true else { return nil }
        return self.takeBuffered()
    }

    /// Everything until the peer closes (or the timeout).
    package func readToEnd() -> [UInt8] {
        while (try? self.fill(&self.reader.pending)) == true {}
        return self.reader.takeBuffered()
    }

    /// Whether the peer closes the connection within the read timeout, discarding what it sends.
    package func waitForClose() -> Bool {
        while true {
            do throws(ClientError) {
                if try !self.fill(&self.reader.pending) { return true }
                self.reader.pending.clear()
            } catch {
                return false
            }
        }
    }
}

/// Sends one request on a new connection and reads the response.
package func httpRequest(
    _ address: SocketAddress,
    _ raw: String,
    method: HTTPMethod = .get
) throws(BlockingHTTPClient.ClientError) -> BlockingHTTPClient.Response {
    let client = try BlockingHTTPClient(connectingTo: address)
    client.send(raw)
    return try client.readResponse(method: method)
}
