import BearerIO
import Foundation
import Glibc

/// A real HTTP/2 server that nobody here wrote the protocol of: Tests/Fixtures/h2/h2_front.py, on
/// Python's `h2` (Debian's python3-h2), in front of an HTTP/1.1 backend (a `MockUpstream`, which
/// checks the tokens and records the requests). Each answer says how the request arrived at it:
/// `x-front-protocol` (`h2` or `http/1.1`), `x-front-connection` (the connection's number, from 1)
/// and `x-front-stream` (the stream id). Over TLS (`tls`) it selects by ALPN from `alpn`; in clear
/// it speaks HTTP/2 to a client that sends the preface (prior knowledge), else HTTP/1.1.
///
/// The test binds the port and hands the listening socket to Python as its standard input, so the
/// server is reachable the moment it starts. Ended by its PID.
package final class H2FrontServer: @unchecked Sendable {
    package let port: Int
    private let pid: pid_t

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/h2/h2_front.py").path

    /// `tls`: serve TLS with the fixtures' `localhost` certificate (`TLSFixtures`), offering `alpn`.
    /// `maxStreams`: its SETTINGS_MAX_CONCURRENT_STREAMS; `GET /front-refused` answers how many
    /// streams beyond it a client opened.
    package init(backendPort: Int, tls: Bool = false, alpn: String = "h2,http/1.1", maxStreams: Int? = nil) throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        self.port = Socket.localAddress(fd)!.port!
        var arguments = [ExternalTool.pythonH2.program, "-I", Self.script, String(backendPort)]
        if tls {
            let directory = TLSFixtures.directory.path
            arguments += ["--tls", directory + "/server.pem", directory + "/server.key", "--alpn", alpn]
        }
        if let maxStreams { arguments += ["--max-streams", String(maxStreams)] }
        self.pid = try spawnProcess(arguments, stdin: fd, stdout: STDERR_FILENO, stderr: STDERR_FILENO)
    }

    deinit { self.stop() }

    package func stop() {
        guard Glibc.kill(self.pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(self.pid, &status, 0)
    }
}
