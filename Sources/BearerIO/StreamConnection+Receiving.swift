import BearerCore
import Glibc

/// The peer's side: readiness events (epoll's, or an in-memory pipe's), what the transport makes of
/// the peer's bytes, and the interest the loop is told.
extension StreamConnection {
    package func ready(_ events: ReadinessEvents) {
        if events.isHangUpOrError {
            let code = self.transport.pendingError()
            if code != 0 {
                self.fail(IOError(errnoCode: code, function: self.state == .connecting ? "connect" : "socket"))
                return
            }
            if self.registeredInterest == .none {
                // Epoll reports a hang-up whatever the interest; with nothing to read or write it would repeat forever.
                self.fail(IOError(errnoCode: ECONNRESET, function: "socket"))
                return
            }
        }
        if self.state == .connecting {
            if events.isWritable || events.isHangUpOrError { self.finishConnecting() }
            return
        }
        if events.isWritable && self.transport.waitsForWritable {
            self.socketWritable()
            if self.state == .closed { return }
        }
        // Only a transport that reads on readiness registers a readable interest (the ring delivers).
        if (events.isReadable || events.isHangUpOrError) && self.registeredInterest.readable && self.wantsToReceive {
            self.receiveOnce()
        }
    }

    /// The socket takes bytes again: send what waited, and tell the owner once nothing is pending.
    private func socketWritable() {
        if let ring = self.transport.ring {
            ring.socketWritable()
            self.updateInterest()
            return
        }
        self.flush()
        if self.state == .open && self.pendingWriteBytes == 0 {
            self.delegate?.streamWritable(self)
        }
    }

    /// Whether the connection wants the peer's bytes now: the owner does, a handshake needs them,
    /// or a lingering close drains them.
    var wantsToReceive: Bool {
        switch self.state {
        case .open:
            if self.hasReadEnded || self.transport.hasReceivedEnd { return false }
            return self.isReadingEnabled || self.transport.isEstablishing
        case .lingering: return !self.hasReadEnded
        case .connecting, .closingAfterFlush, .closed: return false
        }
    }

    private func finishConnecting() {
        let code = self.transport.pendingError()
        guard code == 0 else {
            self.fail(IOError(errnoCode: code, function: "connect"))
            return
        }
        self.state = .open
        self.updateInterest()
        if self.transport.isEstablishing {
            self.establish()
            return
        }
        self.delegate?.streamConnected(self)
    }

    /// Starts or advances the transport's handshake (TLS), once its bytes can flow.
    func establish() {
        do throws(IOError) {
            self.handle(try self.transport.establish(into: &self.inboundStorage))
        } catch {
            self.fail(error)
        }
    }

    @inline(__always)
    private func receiveOnce() {
        self.loop.lendBuffer(to: &self.inboundStorage)
        do throws(IOError) {
            self.handle(try self.transport.receive(into: &self.inboundStorage, isReading: self.isReadingEnabled))
        } catch {
            self.fail(error)
        }
    }

    /// Acts on what the transport made of the peer's bytes.
    @inline(__always)
    func handle(_ outcome: ReceiveOutcome) {
        switch outcome {
        case .bytes: self.receivedBytes()
        case .nothing: self.receivedNothing()
        case .end: self.peerFinishedSending()
        case .established: self.established()
        }
    }

    /// The owner's bytes are in `inbound`.
    @inline(__always)
    private func receivedBytes() {
        if self.state == .lingering {
            // Draining before the close: what the peer still sends is read and dropped.
            self.inboundStorage.clear()
            return
        }
        self.delegate?.streamReceived(self)
        guard self.state != .closed else { return }
        self.releaseInboundIfEmpty()
        // Reading can make a layer answer (a TLS 1.3 key update) or leave it holding more.
        if self.transport.hasOwnOutput {
            self.sendTransportOutput()
            guard self.state != .closed else { return }
        }
        self.scheduleBufferedPass()
    }

    /// Nothing for the owner: a socket that had nothing after all, or a handshake that wants more
    /// (whose flight goes out now), or an end the transport holds until the owner reads again.
    private func receivedNothing() {
        if self.transport.hasOwnOutput {
            self.sendTransportOutput()
            guard self.state != .closed else { return }
        }
        self.releaseInboundIfEmpty()
        self.updateInterest()
    }

    /// The transport's handshake completed.
    private func established() {
        // The handshake's last flight (a server's session tickets too) goes out with the owner's first bytes.
        self.flush()
        guard self.state != .closed else { return }
        self.updateInterest()
        self.delegate?.streamConnected(self)
        guard self.state != .closed else { return }
        self.scheduleBufferedPass()
    }

    /// The peer sent its last byte: a lingering close is done; otherwise the delegate hears of it.
    func peerFinishedSending() {
        self.hasReadEnded = true
        self.releaseInboundIfEmpty()
        self.updateInterest()
        if self.state == .lingering {
            self.finishClosing(error: nil)
        } else {
            self.delegate?.streamReadEnded(self)
        }
    }

    func releaseInboundIfEmpty() {
        if self.inboundStorage.isEmpty && self.inboundStorage.capacity > 0 {
            self.loop.returnBuffer(from: &self.inboundStorage)
        }
    }

    /// Bytes the transport already holds produce no event: read them on this loop turn's end.
    @inline(__always)
    func scheduleBufferedPass() {
        if self.transport.hasBufferedInput { self.scheduleBufferedPassNow() }
    }

    private func scheduleBufferedPassNow() {
        guard !self.isBufferedPassScheduled, self.state == .open, self.isReadingEnabled, !self.hasReadEnded,
            !self.transport.isEstablishing
        else { return }
        self.isBufferedPassScheduled = true
        self.loop.defer { [weak self] in
            guard let self else { return }
            self.isBufferedPassScheduled = false
            guard self.state == .open && self.isReadingEnabled && !self.hasReadEnded else { return }
            do throws(IOError) {
                self.handle(try self.transport.receiveBuffered(into: &self.inboundStorage))
            } catch {
                self.fail(error)
            }
        }
    }

    // MARK: Interest

    func wantedInterest() -> Interest {
        switch self.state {
        case .connecting:
            return .write
        case .open, .closingAfterFlush, .lingering:
            return Interest(
                readable: self.transport.readsOnReadiness && self.wantsToReceive,
                writable: self.transport.waitsForWritable && self.state != .lingering
            )
        case .closed:
            return .none
        }
    }

    func updateInterest() {
        guard self.state != .closed else { return }
        self.transport.setReceiving(self.wantsToReceive)
        let interest = self.wantedInterest()
        guard interest != self.registeredInterest else { return }
        self.registeredInterest = interest
        self.transport.setInterest(interest, on: self.loop)
    }
}
