import BearerCore
import Glibc

/// A blocking connection to the session bus: connect, SASL EXTERNAL, `Hello`, then method calls whose
/// replies (or errors) are matched by serial. Messages that answer nothing asked (the bus's
/// `NameAcquired` signal) are dropped.
///
/// Every step is bounded: a bus that accepts the connection and never speaks is `timedOut` once the
/// bound passed, never a hang. Blocking: used off the event loops, one thread at a time.
package final class DBusConnection {
    private let fd: Int32
    private let address: DBusAddress
    private let timeout: Duration
    private var received: [UInt8] = []
    private var nextSerial: UInt32 = 1
    /// The name the bus gave this connection (`:1.42`).
    package private(set) var uniqueName = ""

    package static let bus = "org.freedesktop.DBus"

    /// Connects to `address` and says hello; each step, and each later call, within `timeout`.
    package init(address: DBusAddress, timeout: Duration, uid: uid_t = getuid()) throws(DBusError) {
        self.address = address
        self.timeout = timeout
        self.fd = socket(
            AF_UNIX,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue),
            0
        )
        guard self.fd >= 0 else {
            throw .cannotConnect(address: address.description, reason: String(cString: strerror(errno)))
        }
        // Every stored property is set: a throw from here on runs deinit, which closes the socket.
        let deadline = Instant.now() + timeout
        try self.connect(deadline: deadline)
        try self.authenticate(uid: uid, deadline: deadline)
        let reply = try self.call(
            destination: Self.bus,
            path: "/org/freedesktop/DBus",
            interface: Self.bus,
            member: "Hello"
        )
        guard let name = reply.first?.stringValue else { throw .unexpectedReply("Hello returned no name") }
        self.uniqueName = name
    }

    deinit {
        Glibc.close(self.fd)
    }

    /// Calls `member` and returns the reply's body; an error reply is `.errorReply`.
    package func call(
        destination: String,
        path: String,
        interface: String,
        member: String,
        body: [DBusValue] = [],
        flags: UInt8 = 0
    ) throws(DBusError) -> [DBusValue] {
        let deadline = Instant.now() + self.timeout
        let serial = self.nextSerial
        self.nextSerial &+= 1
        var message = DBusMessage.call(
            serial: serial,
            destination: destination,
            path: path,
            interface: interface,
            member: member,
            body: body
        )
        message.flags = flags
        try self.send(message.encoded(), step: member, deadline: deadline)
        while true {
            let reply = try self.receiveMessage(step: member, deadline: deadline)
            guard reply.replySerial == serial else { continue }
            switch reply.kind {
            case .methodReturn: return reply.body
            case .error:
                throw .errorReply(name: reply.errorName ?? "", message: reply.body.first?.stringValue ?? "")
            case .methodCall, .signal: continue
            }
        }
    }

    // MARK: Connecting

    private func connect(deadline: Instant) throws(DBusError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name: [UInt8]
        switch self.address {
        case .path(let path): name = Array(path.utf8)
        case .abstract(let abstract): name = [0] + Array(abstract.utf8)
        }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity else {
            throw .cannotConnect(address: self.address.description, reason: "the socket's name is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        // An abstract name is exactly its bytes; a path ends at its NUL.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count + (name.first == 0 ? 0 : 1))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(self.fd, $0, length) }
        }
        if result == 0 { return }
        let code = errno
        guard code == EINPROGRESS || code == EAGAIN || code == EINTR else {
            throw .cannotConnect(address: self.address.description, reason: String(cString: strerror(code)))
        }
        try self.wait(for: Int16(POLLOUT), step: "the connection", deadline: deadline)
        var pending: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(self.fd, SOL_SOCKET, SO_ERROR, &pending, &size)
        guard pending == 0 else {
            throw .cannotConnect(address: self.address.description, reason: String(cString: strerror(pending)))
        }
    }

    /// SASL EXTERNAL with the user's id as decimal text in hex (D-Bus specification, "Authentication
    /// Protocol"): the kernel vouches for the id, so no secret crosses the socket.
    private func authenticate(uid: uid_t, deadline: Instant) throws(DBusError) {
        let identity = String(uid).utf8.map { String($0, radix: 16) }.joined()
        try self.send([0] + Array("AUTH EXTERNAL \(identity)\r\n".utf8), step: "authentication", deadline: deadline)
        let line = try self.receiveLine(deadline: deadline)
        guard line.hasPrefix("OK ") else { throw .authenticationRejected(address: self.address.description) }
        try self.send(Array("BEGIN\r\n".utf8), step: "authentication", deadline: deadline)
    }

    // MARK: Bytes

    private func send(_ bytes: [UInt8], step: String, deadline: Instant) throws(DBusError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            let code = errno
            guard sent < 0, code == EAGAIN || code == EINTR else { throw self.failure(code) }
            try self.wait(for: Int16(POLLOUT), step: step, deadline: deadline)
        }
    }

    /// One SASL line, without its CRLF; bytes after it stay for the messages.
    private func receiveLine(deadline: Instant) throws(DBusError) -> String {
        while true {
            if let end = self.received.indices.dropLast().first(where: {
                self.received[$0] == UInt8(ascii: "\r") && self.received[$0 + 1] == UInt8(ascii: "\n")
            }) {
                let line = String(decoding: self.received[..<end], as: UTF8.self)
                self.received.removeFirst(end + 2)
                return line
            }
            guard self.received.count < 16 * 1024 else {
                throw .authenticationRejected(address: self.address.description)
            }
            try self.receiveMore(step: "authentication", deadline: deadline)
        }
    }

    private func receiveMessage(step: String, deadline: Instant) throws(DBusError) -> DBusMessage {
        while true {
            if let message = try self.takeMessage() { return message }
            try self.receiveMore(step: step, deadline: deadline)
        }
    }

    /// The first whole message received, if one is.
    private func takeMessage() throws(DBusError) -> DBusMessage? {
        do throws(DBusDecodeError) {
            guard let length = try DBusMessage.frameLength(self.received[...]), self.received.count >= length else {
                return nil
            }
            let bytes = Array(self.received[..<length])
            self.received.removeFirst(length)
            return try DBusMessage(decoding: bytes)
        } catch {
            throw .malformed(error)
        }
    }

    private func receiveMore(step: String, deadline: Instant) throws(DBusError) {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(self.fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                self.received += chunk[..<count]
                return
            }
            if count == 0 { throw .closed(address: self.address.description) }
            let code = errno
            guard code == EAGAIN || code == EINTR else { throw self.failure(code) }
            try self.wait(for: Int16(POLLIN), step: step, deadline: deadline)
        }
    }

    /// Waits until the socket is ready for `events`, or throws `timedOut` at the deadline.
    private func wait(for events: Int16, step: String, deadline: Instant) throws(DBusError) {
        while true {
            let remaining = deadline - Instant.now()
            guard remaining > .zero else {
                throw .timedOut(address: self.address.description, step: step, after: self.timeout)
            }
            var poller = pollfd(fd: self.fd, events: events, revents: 0)
            let milliseconds = Int32(clamping: (remaining.nanoseconds + 999_999) / 1_000_000)
            let ready = poll(&poller, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw self.failure(errno) }
        }
    }

    private func failure(_ code: Int32) -> DBusError {
        code == ECONNRESET || code == EPIPE
            ? .closed(address: self.address.description)
            : .cannotConnect(address: self.address.description, reason: String(cString: strerror(code)))
    }
}
