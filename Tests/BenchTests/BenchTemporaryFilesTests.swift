import BearerCore
import BearerIO
import BearerMocks
import Foundation
import Glibc
import Testing

/// The built `bearer-bench`, run with a `TMPDIR` of the test's own: whatever way it ends, it leaves
/// nothing there (its proxies' configs, the DPoP key, the local CA with its private key).
@Suite struct BenchTemporaryFilesTests {
    static var binary: String {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("bearer-bench")
            .path
    }

    /// Everything under `folder`, as paths relative to it.
    static func contents(of folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).sorted()
    }

    /// A proxy that never starts ends the run with an error; its config went with it (it stayed
    /// behind when the proxy had exited by itself).
    @Test func aRunEndedByAnErrorLeavesNothingBehind() throws {
        let temporary = try ScratchSpace.newDirectory("bench-tmp")
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary
        let outcome = try runProgram(
            [Self.binary, "--proxy-bin", "/bin/false", "--scenario", "steady", "--repeat", "1"],
            environment: environment,
            timeout: .seconds(60)
        )
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("Error: bearer-proxy did not start"), "\(outcome.standardError)")
        #expect(Self.contents(of: temporary) == [])
    }

    /// A terminal's Ctrl-C (SIGINT to the bench's whole process group) in the middle of a run: the
    /// bench dies of it as before (status 130), once its temporary files are gone.
    @Test(arguments: [SIGINT, SIGTERM])
    func anInterruptedRunLeavesNothingBehind(signal: Int32) throws {
        let temporary = try ScratchSpace.newDirectory("bench-tmp")
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let bench = try ChildProcess(
            [
                Self.binary, "--scenario", "dpop", "--duration", "60s", "--warmup", "0s", "--repeat", "1",
                "--connections", "2",
            ],
            stdout: null,
            stderr: null,
            environment: environment,
            ownProcessGroup: true
        )
        defer {
            if bench.isRunning { kill(-bench.pid, SIGKILL) }
            _ = bench.waitUntilExit()
        }
        // The first scenario's proxy has its config: there is something to remove.
        #expect(
            waitUntil(timeout: .seconds(30)) {
                !bench.isRunning || Self.contents(of: temporary).contains { $0.hasSuffix("/proxy.conf") }
            }
        )
        try #require(bench.isRunning, "the bench ended before it was interrupted")
        kill(-bench.pid, signal)
        #expect(bench.wait(timeout: .seconds(30)) == .killed(signal: signal))
        #expect(Self.contents(of: temporary) == [])
    }
}
