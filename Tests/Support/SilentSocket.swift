import BearerIO
import Glibc

/// A unix socket that takes connections and never says a word: a session bus that hangs. Connecting
/// succeeds (the kernel queues the connection on the listener's backlog); nothing is ever read or
/// written, so a client only learns of it from its own deadline.
package final class SilentSocket: @unchecked Sendable {
    package let path: String
    private let fd: Int32

    package init() throws {
        self.path = try ScratchSpace.newPath("silent-bus")
        self.fd = try Socket.listen(on: .unix(path: self.path), backlog: 16)
    }

    deinit {
        Socket.close(self.fd)
    }

    /// `unix:path=…`, for `DBUS_SESSION_BUS_ADDRESS`.
    package var addressText: String { "unix:path=\(self.path)" }
}
