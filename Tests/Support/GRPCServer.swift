import BearerIO
import Foundation
import Glibc

/// A real gRPC server and client nobody here wrote the protocol of: Tests/Fixtures/grpc, on Debian's
/// python3-grpcio, with hand-written generic handlers on raw bytes. The server accepts a call only
/// with one `authorization` the mock API at `checkURL` (a `MockUpstream`'s `/whoami`) accepts, and
/// answers UNAUTHENTICATED otherwise, Trailers-Only as grpcio does; its answers say which
/// `authorization` values it saw. It writes its port into a file, which the test waits for. Ended
/// by its PID.
package final class GRPCServer: @unchecked Sendable {
    package let port: Int
    private let pid: pid_t

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/grpc").path

    /// `directory`: where its port file goes; `tls`: TLS instead of h2c.
    package init(checkURL: String, directory: String, tls: Bool = false) throws {
        let portFile = directory + "/grpc-port"
        var arguments = [ExternalTool.pythonGRPC.program, "-I", Self.fixtures + "/grpc_server.py", portFile, checkURL]
        if tls {
            let folder = TLSFixtures.directory.path
            arguments += [folder + "/server.pem", folder + "/server.key"]
        }
        self.pid = try spawnProcess(
            arguments,
            stdout: STDERR_FILENO,
            stderr: STDERR_FILENO
        )
        guard waitUntil(timeout: .seconds(20), { FileManager.default.fileExists(atPath: portFile) }),
            let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text)
        else {
            Self.end(self.pid)
            throw GRPCServerError.didNotStart
        }
        self.port = port
    }

    deinit { self.stop() }

    package func stop() { Self.end(self.pid) }

    private static func end(_ pid: pid_t) {
        guard Glibc.kill(pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    /// `count` concurrent calls of `method` from grpcio's client to `target` (h2c), `authorization`
    /// sent as the calls' own metadata when given: one line per call, `OK …` or `CODE details`.
    /// `trusting`: TLS trusting that CA file, through the `https_proxy` of `environment` (the
    /// client's whole environment when given); `firstMessage`: a bidi call's first message padded
    /// to that many bytes.
    package static func call(
        _ target: String,
        _ method: String,
        count: Int = 1,
        authorization: String? = nil,
        trusting caFile: String? = nil,
        firstMessage: Int? = nil,
        environment: [String: String]? = nil
    ) throws -> [String] {
        var arguments = [
            ExternalTool.pythonGRPC.program, "-I", Self.fixtures + "/grpc_client.py", target, method, String(count),
        ]
        if let authorization { arguments.append(authorization) }
        if let caFile { arguments += ["--ca", caFile] }
        if let firstMessage { arguments += ["--first", String(firstMessage)] }
        let outcome = try runProgram(arguments, environment: environment, timeout: .seconds(60))
        return outcome.standardOutput.split(separator: "\n").map(String.init)
    }
}

package enum GRPCServerError: Error {
    case didNotStart
}
