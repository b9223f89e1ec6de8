import BearerCore
import BearerKeyring
import BearerTestSupport
import Glibc
import Testing

/// The client against a real `dbus-daemon --session` started for the test, and against sockets that
/// misbehave.
@Suite(.requires(.dbusDaemon)) struct DBusConnectionTests {
    /// SASL EXTERNAL and Hello give the connection a unique name; a call's reply is matched by serial
    /// past the bus's NameAcquired signal that comes first.
    @Test func helloAndACallWithAReply() throws {
        let bus = try SessionBus()
        let connection = try DBusConnection(address: bus.address, timeout: .seconds(5))
        #expect(connection.uniqueName.hasPrefix(":"))
        let names = try connection.call(
            destination: DBusConnection.bus,
            path: "/org/freedesktop/DBus",
            interface: DBusConnection.bus,
            member: "ListNames"
        )
        let listed = names.first?.elements?.compactMap(\.stringValue) ?? []
        #expect(listed.contains(DBusConnection.bus))
        #expect(listed.contains(connection.uniqueName))
        let owner = try connection.call(
            destination: DBusConnection.bus,
            path: "/org/freedesktop/DBus",
            interface: DBusConnection.bus,
            member: "NameHasOwner",
            body: [.string("org.freedesktop.secrets")]
        )
        #expect(owner == [.boolean(false)])
    }

    /// An error reply is the typed error with the callee's name and text.
    @Test func errorRepliesAreTypedErrors() throws {
        let bus = try SessionBus()
        let connection = try DBusConnection(address: bus.address, timeout: .seconds(5))
        do {
            _ = try connection.call(
                destination: "org.freedesktop.secrets",
                path: "/org/freedesktop/secrets",
                interface: "org.freedesktop.Secret.Service",
                member: "OpenSession",
                body: [.string("plain"), .variant(.string(""))]
            )
            Issue.record("a call to a name nobody owns returned")
        } catch {
            guard case .errorReply(let name, let message) = error else {
                Issue.record("not an error reply: \(error)")
                return
            }
            #expect(name == "org.freedesktop.DBus.Error.ServiceUnknown")
            #expect(message.contains("org.freedesktop.secrets"))
        }
    }

    /// A socket that accepts and never speaks is `timedOut` once the bound passed, not a hang.
    @Test func aSilentBusTimesOutWithinTheBound() throws {
        let silent = try SilentSocket()
        let started = Instant.now()
        #expect(
            throws: DBusError.timedOut(
                address: "unix:path=\(silent.path)",
                step: "authentication",
                after: .milliseconds(300)
            )
        ) {
            try DBusConnection(address: .path(silent.path), timeout: .milliseconds(300))
        }
        #expect(Instant.now() - started < .seconds(2))
    }

    /// An abstract socket is reached by its name (the silent one answers nothing, so the connect
    /// succeeding shows as the timeout of the step after it).
    @Test func abstractSocketsAreReached() throws {
        let name = "bearer-test-\(getpid())-\(Instant.now().nanoseconds)"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = [0] + Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0)
        #expect(
            throws: DBusError.timedOut(
                address: "unix:abstract=\(name)",
                step: "authentication",
                after: .milliseconds(200)
            )
        ) {
            try DBusConnection(address: .abstract(name), timeout: .milliseconds(200))
        }
        #expect(throws: DBusError.cannotConnect(address: "unix:abstract=\(name)x", reason: "Connection refused")) {
            try DBusConnection(address: .abstract(name + "x"), timeout: .milliseconds(200))
        }
    }

    /// No socket at the path: the error names the address and the system's reason.
    @Test func noSocketIsACannotConnect() throws {
        let path = try ScratchSpace.newPath("no-bus")
        #expect(throws: DBusError.cannotConnect(address: "unix:path=\(path)", reason: "No such file or directory")) {
            try DBusConnection(address: .path(path), timeout: .seconds(1))
        }
    }
}
