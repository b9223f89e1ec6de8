import BearerCore
import BearerIO
import BearerKeyring
import Glibc

/// A private D-Bus session bus (Debian's `dbus-daemon`) in a folder of its own, and on request a real
/// Secret Service on it (`gnome-keyring-daemon`), both ended by their PIDs when this goes away.
///
/// The bus's configuration lists no service folders, so nothing is started on demand: a test that
/// wants a keyring starts it, and one that wants none has none. The keyring lives under the folder
/// (HOME, XDG_DATA_HOME, XDG_RUNTIME_DIR there), never in the user's.
package final class SessionBus: @unchecked Sendable {
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    package let directory: String
    /// `unix:path=…/bus`, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    package let addressText: String
    package let address: DBusAddress
    /// The bus first, then what runs on it: ended in reverse.
    private let children = Locked<[ChildProcess]>([])

    /// Starts the bus and waits (bounded) until it says hello.
    package init() throws {
        self.directory = try ScratchSpace.newDirectory("bus")
        let socket = "\(self.directory)/bus"
        self.addressText = "unix:path=\(socket)"
        self.address = .path(socket)
        let configuration = "\(self.directory)/bus.conf"
        try Self.write(
            """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
              "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(self.addressText)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """,
            to: configuration
        )
        let daemon = try Self.start(
            [ExternalTool.dbusDaemon.program, "--nofork", "--config-file=\(configuration)"],
            log: "\(self.directory)/dbus-daemon.log",
            environment: [:]
        )
        self.children.withLock { $0.append(daemon) }
        let address = self.address
        guard waitUntil(timeout: .seconds(20), { (try? DBusConnection(address: address, timeout: .seconds(2))) != nil })
        else { throw StartError(description: "dbus-daemon did not answer on \(socket)") }
    }

    deinit {
        for child in self.children.withLock({ $0 }).reversed() {
            child.signal(SIGTERM)
            if child.wait(timeout: .seconds(10)) == nil {
                child.signal(SIGKILL)
                _ = child.waitUntilExit()
            }
        }
    }

    /// What a program on this bus, and its keyring, needs: the bus's address and the folders.
    package var environment: [String: String] {
        [
            "DBUS_SESSION_BUS_ADDRESS": self.addressText,
            "HOME": "\(self.directory)/home",
            "XDG_DATA_HOME": "\(self.directory)/home/data",
            "XDG_CONFIG_HOME": "\(self.directory)/home/config",
            "XDG_RUNTIME_DIR": "\(self.directory)/run",
            "PATH": "/usr/bin:/bin",
        ]
    }

    /// Starts `arguments` on this bus, its output in `log` (a file in the folder), ended with the bus.
    func startOnBus(_ arguments: [String], log: String, stdin: Int32? = nil) throws {
        let child = try Self.start(
            arguments,
            log: "\(self.directory)/\(log)",
            environment: self.environment,
            stdin: stdin
        )
        self.children.withLock { $0.append(child) }
    }

    private static func start(
        _ arguments: [String],
        log: String,
        environment: [String: String],
        stdin: Int32? = nil
    ) throws -> ChildProcess {
        let output = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw StartError(description: "cannot create \(log)") }
        defer { close(output) }
        var environment = environment
        if environment.isEmpty { environment["PATH"] = "/usr/bin:/bin" }
        return try ChildProcess(arguments, stdin: stdin, stdout: output, stderr: output, environment: environment)
    }

    private static func write(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StartError(description: "cannot create \(path)") }
        defer { close(fd) }
        try SystemCall.writeAll(fd, Array(text.utf8))
    }
}
