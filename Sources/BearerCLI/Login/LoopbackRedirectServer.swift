import BearerCore
import BearerHTTP
import BearerIO
import BearerProxy
import Dispatch

/// The listener a browser login's redirect comes back to (RFC 8252 §7.3): on 127.0.0.1 only, never a
/// wildcard address, so nothing but this machine can deliver a code; it answers each request with a
/// small page and closes as soon as the one callback of this login has arrived.
final class LoopbackRedirectServer: Sendable {
    /// Where it listens: 127.0.0.1 and the port.
    let address: SocketAddress
    var port: Int { self.address.port ?? 0 }
    let callback: LoopbackCallback
    private let fd: Int32
    private let loop: EventLoop
    private let listener = Locked<UnsafeTransfer<Listener>?>(nil)
    private let verdict = Locked<LoopbackCallback.Verdict?>(nil)
    private let arrived = DispatchSemaphore(value: 0)

    /// `http://127.0.0.1:PORT/callback`
    var redirectURI: String { "http://127.0.0.1:\(self.port)\(LoopbackCallback.path)" }

    /// Binds 127.0.0.1:`port` (0: any free port) and starts accepting on `loop`.
    init(port: Int, callback: LoopbackCallback, loop: EventLoop) throws(LoginError) {
        do throws(IOError) {
            self.fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: port)!, backlog: 16)
        } catch {
            throw .cannotListen("127.0.0.1:\(port): \(error.reason) (set redirect_port to a free port, or 0)")
        }
        self.address = Socket.localAddress(self.fd) ?? SocketAddress(ipAddress: "127.0.0.1", port: port)!
        self.callback = callback
        self.loop = loop
        loop.execute {
            let listener = Listener(
                endpoint: ListeningEndpoint(socket: self.fd, address: self.address),
                loop: loop,
                onAccept: { stream in stream.start(delegate: LoopbackCallbackConnection(stream: stream, server: self))
                },
                onAcceptError: { _ in }
            )
            listener.start()
            self.listener.withLock { $0 = UnsafeTransfer(listener) }
        }
    }

    /// Waits for this login's callback, at most until `deadline`; nil when it did not come in time.
    /// The listener is closed either way.
    func waitForCallback(until deadline: Instant) -> LoopbackCallback.Verdict? {
        let came = self.arrived.wait(until: deadline)
        self.stopListening()
        return came ? self.verdict.withLock { $0 } : nil
    }

    /// The callback of this login arrived: accept no other connection.
    func stopListening() {
        guard !self.loop.inEventLoop else {
            self.stopListeningOnLoop()
            return
        }
        let done = DispatchSemaphore(value: 0)
        self.loop.execute {
            self.stopListeningOnLoop()
            done.signal()
        }
        done.wait()
    }

    private func stopListeningOnLoop() {
        guard let listener = self.listener.withLock({ $0 }) else { return }
        listener.value.stop()
        Socket.close(self.fd)
        self.listener.withLock { $0 = nil }
    }

    /// Called once the browser has the page for the final verdict (or went away).
    fileprivate func finished(_ verdict: LoopbackCallback.Verdict) {
        let isFirst = self.verdict.withLock { current in
            guard current == nil else { return false }
            current = verdict
            return true
        }
        if isFirst { self.arrived.signal() }
    }
}

/// One browser connection to the loopback listener. Confined to its loop.
private final class LoopbackCallbackConnection: StreamConnectionDelegate {
    let stream: StreamConnection
    let server: LoopbackRedirectServer
    private var parser = HTTPRequestParser(maximumHeadBytes: 16 * 1024)
    private var final: LoopbackCallback.Verdict?

    init(stream: StreamConnection, server: LoopbackRedirectServer) {
        self.stream = stream
        self.server = server
    }

    func streamReceived(_ connection: StreamConnection) {
        while !connection.isClosed {
            let event: HTTPRequestParser.Event
            do throws(HTTPParseError) {
                event = try connection.inbound.parseNext { raw throws(HTTPParseError) in try self.parser.next(raw) }
            } catch {
                connection.close()
                return
            }
            switch event {
            case .needMore:
                return
            case .head(let head, _):
                self.answer(head)
                return
            case .body, .end:
                continue
            }
        }
    }

    /// One request per connection: the page, then close.
    private func answer(_ head: RequestHead) {
        let verdict = self.server.callback.judge(
            method: head.string(head.methodRange),
            target: head.string(head.target)
        )
        let (status, html) = LoopbackCallback.page(for: verdict)
        self.stream.withOutbound { buffer in
            buffer.writeString("HTTP/1.1 \(status) \(reasonPhrase(status))\r\n")
            buffer.writeString("Content-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n")
            buffer.writeString("Content-Length: \(html.utf8.count)\r\nConnection: close\r\n\r\n")
            buffer.writeString(html)
        }
        switch verdict {
        case .accept, .deny:
            self.final = verdict
            self.server.stopListening()
        case .refuse:
            break
        }
        self.stream.closeAfterFlush()
    }

    func streamReadEnded(_ connection: StreamConnection) {
        if self.final == nil { connection.closeAfterFlush() }
    }
    func streamWritable(_ connection: StreamConnection) {}
    func streamConnected(_ connection: StreamConnection) {}

    func streamClosed(_ connection: StreamConnection, error: IOError?) {
        // The verdict counts once the browser has its page (or went away): exiting earlier could cut it.
        if let final = self.final { self.server.finished(final) }
    }
}
