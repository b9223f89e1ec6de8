import BearerCore
import Glibc

/// The ring's events, when the loop does its I/O through io_uring: bytes as they arrive, sends as
/// they complete, the end of the receive. The connection is the ring's receiver whatever is layered
/// on the ring (TLS), and hands each event to its transport.
extension StreamConnection: RingReceiver {
    package func ringReceived(_ bytes: UnsafeRawBufferPointer) {
        switch self.state {
        case .open:
            break
        case .lingering, .closingAfterFlush:
            // Draining before the close: what the peer still sends is read and dropped.
            return
        case .connecting, .closed:
            return
        }
        self.loop.lendBuffer(to: &self.inboundStorage)
        do throws(IOError) {
            self.handle(
                try self.transport.received(bytes, into: &self.inboundStorage, isReading: self.isReadingEnabled)
            )
        } catch {
            self.fail(error)
        }
    }

    package func ringSendCompleted(_ result: Int32) {
        guard let ring = self.transport.ring else { return }
        if self.state == .closed {
            ring.sendEnded()
            self.transport.release(from: self.loop)
            return
        }
        let completion: SendCompletion
        do throws(IOError) {
            completion = try ring.sendCompleted(result)
        } catch {
            self.fail(error)
            return
        }
        switch completion {
        case .resent: break
        case .waitsForWritable: self.waitForWritable()
        case .drained:
            // Nothing written meanwhile (the common case): done, without another pass.
            if self.outbound.isEmpty && !self.transport.hasOwnOutput { self.flushed() } else { self.flush() }
        }
        if self.state == .open && ring.shouldWakeOwner(pendingWriteBytes: self.pendingWriteBytes) {
            self.delegate?.streamWritable(self)
        }
    }

    package func ringReceiveEnded(_ result: Int32) {
        guard self.state != .closed else { return }
        guard self.state == .open else {
            // Closing: nothing more goes to the owner, or through a layer.
            if result == 0 {
                self.peerFinishedSending()
            } else {
                self.fail(IOError(errnoCode: -result, function: "recv"))
            }
            return
        }
        let isReading = self.isReadingEnabled
        do throws(IOError) {
            if result == 0 {
                self.handle(try self.transport.receivedEnd(into: &self.inboundStorage, isReading: isReading))
            } else {
                let error = IOError(errnoCode: -result, function: "recv")
                self.handle(try self.transport.receiveFailed(error, into: &self.inboundStorage, isReading: isReading))
            }
        } catch {
            self.fail(error)
        }
    }
}
