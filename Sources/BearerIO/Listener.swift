import BearerCore
import CBearerLinux
import Glibc

/// Accepts connections from a listening socket on one event loop.
///
/// Each loop has a `Listener` for the same socket, registered with EPOLLEXCLUSIVE, so the kernel
/// wakes one loop per incoming connection and connections spread over the loops; a connection then
/// lives on the loop that accepted it. Confined to its loop.
package final class Listener: Selectable {
    package let fd: Int32
    /// Unowned and unchecked: a loop outlives everything registered on it (it closes them when it
    /// stops), and a checked reference would cost an atomic operation per access.
    package unowned(unsafe) let loop: EventLoop
    private let onAccept: (Int32) -> Void
    private let onAcceptError: (IOError) -> Void
    private var isPaused = false
    private var isClosed = false

    /// How long accepting pauses when the process is out of file descriptors, so the loop does not
    /// spin on a connection it cannot take.
    package static let descriptorExhaustionPause: Duration = .milliseconds(100)

    package init(
        fd: Int32,
        loop: EventLoop,
        onAccept: @escaping (Int32) -> Void,
        onAcceptError: @escaping (IOError) -> Void
    ) {
        self.fd = fd
        self.loop = loop
        self.onAccept = onAccept
        self.onAcceptError = onAcceptError
    }

    package func start() {
        self.loop.register(self.fd, self, interest: .read, exclusive: true)
    }

    /// Stops accepting on this loop; the socket itself is closed by its owner.
    package func stop() {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.loop.deregister(self.fd)
    }

    package func ready(_ events: ReadinessEvents) {
        // A bounded batch per wake-up keeps one busy listener from starving established connections.
        for _ in 0..<64 {
            guard !self.isClosed, !self.isPaused else { return }
            do throws(IOError) {
                switch try SystemCall.nonBlocking("accept", { cbl_accept4(self.fd, nil, nil) }) {
                case .completed(let fd): self.onAccept(Int32(fd))
                case .wouldBlock: return
                }
            } catch {
                switch error.errnoCode {
                case ECONNABORTED:
                    // The client gave up before it was accepted: the next one may be waiting.
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    self.onAcceptError(error)
                    self.pause()
                    return
                default:
                    self.onAcceptError(error)
                    return
                }
            }
        }
    }

    private func pause() {
        self.isPaused = true
        self.loop.setInterest(self.fd, .none)
        self.loop.schedule(after: Self.descriptorExhaustionPause) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.isPaused = false
            self.loop.setInterest(self.fd, .read)
        }
    }
}

@available(*, unavailable)
extension Listener: Sendable {}
