import BearerCore
import CBearerLinux
import Glibc

/// Something that receives and sends through the ring: bytes as they arrive, the end of its stream,
/// and its sends as they complete.
package protocol RingReceiver: Selectable {
    /// Bytes arrived (valid only during the call).
    func ringReceived(_ bytes: UnsafeRawBufferPointer)
    /// The receive ended for good: 0 for the peer's end of stream, else a negative errno. (A receive
    /// that merely stopped — out of buffers, cancelled and wanted again — is armed again by the loop.)
    func ringReceiveEnded(_ result: Int32)
    /// A send finished: the bytes sent, or a negative errno.
    func ringSendCompleted(_ result: Int32)
}

/// The `io = io_uring` turn: one `io_uring_enter` submits what the last turn queued (receives armed,
/// receives cancelled) and waits for completions; receive completions go straight to their sockets,
/// and the epoll descriptor, polled through the ring, brings the readiness events the rest still use.
extension EventLoop {
    /// The user data of completions: what they are for.
    private static let epollPollData: UInt64 = .max - 1
    private static let cancelData: UInt64 = .max - 2
    /// Set on a receive's user data; the rest is the socket's `token` (descriptor and generation).
    private static let receiveTag: UInt64 = 1 << 63
    /// Set on a send's user data.
    private static let sendTag: UInt64 = 1 << 62

    func runWithRing(_ ring: IOUring, events: UnsafeMutableRawPointer, maximumEvents: Int) {
        self.armEpollPoll(ring)
        // The ring's poll on the epoll descriptor fires on new readiness only; epoll itself is level-
        // triggered. So while epoll keeps reporting events (a TLS socket with more to read, a
        // listener with more to accept), it is asked again every turn, without waiting.
        var epollMayHaveMore = false
        while !self.stopRequested.load(ordering: .acquiring) {
            let timeout = epollMayHaveMore ? 0 : self.epollTimeout()
            ring.submit(
                waitingFor: 1,
                timeoutNanoseconds: timeout < 0 ? nil : Int64(timeout) * 1_000_000
            )
            self.currentTime = self.clock.now()
            var handledIO = false
            var epollPolled = false
            ring.forEachCompletion { data, result, flags in
                handledIO = true
                if data == Self.epollPollData {
                    epollPolled = true
                    if flags & IORING_CQE_F_MORE == 0 { self.armEpollPoll(ring) }
                } else if data & Self.receiveTag != 0 {
                    self.dispatchReceive(ring, data: data, result: result, flags: flags)
                } else if data & Self.sendTag != 0 {
                    self.dispatchSend(data: data, result: result)
                }
            }
            if epollPolled || epollMayHaveMore {
                let count = self.waitForEpollEvents(events, maximumEvents, timeout: 0)
                self.dispatchEpollEvents(events, count)
                epollMayHaveMore = count > 0
                handledIO = handledIO || count > 0
            }
            ring.buffers.publish()
            self.endTurn(handledIO: handledIO)
        }
    }

    /// A stopping loop: every request still running is cancelled and its completion awaited (a send
    /// reads memory its socket owns), so nothing the kernel does outlives the loop's objects.
    func cancelEverything(_ ring: IOUring) {
        cbl_sqe_cancel_all(ring.nextEntry(), Self.cancelData)
        let deadline = self.clock.now() + .seconds(1)
        while ring.outstanding > 0 && self.clock.now() < deadline {
            ring.submit(waitingFor: 1, timeoutNanoseconds: 10_000_000)
            ring.forEachCompletion { data, result, flags in
                if data & Self.sendTag != 0 {
                    self.dispatchSend(data: data, result: result)
                } else if data & Self.receiveTag != 0 {
                    self.dispatchReceive(ring, data: data, result: result, flags: flags)
                }
            }
        }
    }

    private func dispatchSend(data: UInt64, result: Int32) {
        let token = data & ~Self.sendTag
        let fd = Int(UInt32(truncatingIfNeeded: token))
        let generation = UInt32(truncatingIfNeeded: token >> 32)
        guard fd < self.slots.count, self.slots[fd].generation == generation,
            let sender = self.slots[fd].ringReceiver
        else { return }
        self.slots[fd].isSending = false
        sender.ringSendCompleted(result)
    }

    /// Sends `bytes` from registered `fd` through the ring; they must stay untouched until
    /// `ringSendCompleted`. One send at a time per socket.
    package func startSending(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let ring = self.ring else { preconditionFailure("startSending without io_uring") }
        let index = Int(fd)
        precondition(!self.slots[index].isSending, "two sends at once on fd \(fd)")
        self.slots[index].isSending = true
        cbl_sqe_send(ring.nextEntry(), fd, bytes.baseAddress, UInt32(bytes.count), self.token(fd) | Self.sendTag)
    }

    /// Cancels `fd`'s send (a stream closed while sending); its completion still comes.
    package func cancelSending(_ fd: Int32) {
        guard let ring = self.ring, Int(fd) < self.slots.count, self.slots[Int(fd)].isSending else { return }
        cbl_sqe_cancel(ring.nextEntry(), self.token(fd) | Self.sendTag, Self.cancelData)
    }

    private func armEpollPoll(_ ring: IOUring) {
        cbl_sqe_poll_multishot(ring.nextEntry(), self.epollFD, UInt32(POLLIN), Self.epollPollData)
    }

    private func dispatchReceive(_ ring: IOUring, data: UInt64, result: Int32, flags: UInt32) {
        let token = data & ~Self.receiveTag
        let fd = Int(UInt32(truncatingIfNeeded: token))
        let generation = UInt32(truncatingIfNeeded: token >> 32)
        let buffer = flags & IORING_CQE_F_BUFFER != 0 ? UInt16(truncatingIfNeeded: flags >> 16) : nil
        defer { if let buffer { ring.buffers.recycle(buffer) } }
        guard fd < self.slots.count, self.slots[fd].generation == generation,
            let receiver = self.slots[fd].ringReceiver
        else { return }
        if result > 0, let buffer {
            receiver.ringReceived(ring.buffers.bytes(buffer, length: Int(result)))
        }
        // More completions will come for this receive: nothing else to decide.
        guard flags & IORING_CQE_F_MORE == 0 else { return }
        // The receiver may have gone (closed) while handling its bytes.
        guard self.slots[fd].generation == generation else { return }
        let wanted: Bool
        switch self.slots[fd].receive {
        case .armed: wanted = true
        case .cancelling(let rearm): wanted = rearm
        case .idle: wanted = false
        }
        self.slots[fd].receive = .idle
        if result == 0 || (result < 0 && result != -ENOBUFS && result != -ECANCELED && result != -EINTR) {
            receiver.ringReceiveEnded(result)
            return
        }
        if wanted { self.startReceiving(Int32(fd)) }
    }

    /// Arms a multishot receive for registered `fd`: its bytes arrive through `ringReceived`.
    package func startReceiving(_ fd: Int32) {
        guard let ring = self.ring else { preconditionFailure("startReceiving without io_uring") }
        let index = Int(fd)
        guard self.slots[index].handler != nil else { return }
        switch self.slots[index].receive {
        case .armed, .cancelling(rearm: true):
            return
        case .cancelling(rearm: false):
            self.slots[index].receive = .cancelling(rearm: true)
        case .idle:
            self.slots[index].receive = .armed
            self.slots[index].receiveBatch = ring.batch
            cbl_sqe_recv_multishot(ring.nextEntry(), fd, ring.buffers.group, self.token(fd) | Self.receiveTag)
        }
    }

    /// Cancels `fd`'s receive before its descriptor is closed. The kernel looks a request's
    /// descriptor up when the ring submits it, at the start of the next turn; a receive armed in this
    /// turn has not gone yet, and once the number is closed, whatever socket any thread opens next
    /// may take it: that receive would take that socket's bytes (a stream of another connection
    /// losing a piece, which TLS reports as a bad record MAC). Such a receive goes to the kernel
    /// now, with its cancellation, while the number is still its socket's: one more system call,
    /// for a stream closed in the turn that armed its receive.
    func stopReceivingBeforeClose(_ fd: Int32) {
        guard let ring = self.ring, Int(fd) < self.slots.count else { return }
        let isQueued: Bool
        if case .armed = self.slots[Int(fd)].receive {
            isQueued = self.slots[Int(fd)].receiveBatch == ring.batch
        } else {
            isQueued = false
        }
        self.stopReceiving(fd)
        if isQueued { ring.submit(waitingFor: 0, timeoutNanoseconds: nil) }
    }

    /// Cancels `fd`'s receive; bytes already in flight are still delivered.
    package func stopReceiving(_ fd: Int32) {
        guard let ring = self.ring else { return }
        let index = Int(fd)
        guard index < self.slots.count else { return }
        switch self.slots[index].receive {
        case .idle, .cancelling(rearm: false):
            return
        case .cancelling(rearm: true):
            self.slots[index].receive = .cancelling(rearm: false)
        case .armed:
            self.slots[index].receive = .cancelling(rearm: false)
            cbl_sqe_cancel(ring.nextEntry(), self.token(fd) | Self.receiveTag, Self.cancelData)
        }
    }
}
