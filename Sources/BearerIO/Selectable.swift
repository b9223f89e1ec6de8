/// Something registered with an event loop's epoll set: a connection, a listener, a wake-up fd.
///
/// Called only on the loop that registered it.
package protocol Selectable: AnyObject {
    func ready(_ events: ReadinessEvents)
    /// The loop is stopping with this still registered: release what it holds (file descriptors,
    /// references that form cycles), without calling back into anything.
    func loopWillStop()
}

extension Selectable {
    package func loopWillStop() {}
}

/// What epoll reported for a descriptor.
package struct ReadinessEvents: Sendable {
    package var isReadable: Bool
    package var isWritable: Bool
    /// The peer hung up or the socket has a pending error; reading or writing will say which.
    package var isHangUpOrError: Bool
}

/// Which readiness a registration asks for.
package struct Interest: Equatable, Sendable {
    package var readable: Bool
    package var writable: Bool

    package init(readable: Bool, writable: Bool) {
        self.readable = readable
        self.writable = writable
    }

    package static let none = Interest(readable: false, writable: false)
    package static let read = Interest(readable: true, writable: false)
    package static let write = Interest(readable: false, writable: true)
}
