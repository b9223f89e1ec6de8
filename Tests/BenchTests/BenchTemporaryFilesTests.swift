import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// The built `bearer-bench`, run with a `TMPDIR` of the test's own: whatever way it ends, it leaves
/// nothing there (its proxies' configs, the DPoP key, the local CA with its private key), and no
/// program it started goes on running.
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

    /// A SIGTERM to the bench alone (`kill PID`, not its process group: the children do not get
    /// it): by the time the bench has died of it, the proxy it started has ended too. Before, the
    /// proxy ran on, holding its port, until it next wrote to the bench's closed stderr pipe.
    @Test func aSignalToTheBenchAloneEndsTheProxiesItStarted() throws {
        let temporary = try ScratchSpace.newDirectory("bench-tmp")
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        let errors = makeClosingPipe()
        defer { close(null) }
        let bench = try ChildProcess(
            [
                Self.binary, "--scenario", "steady", "--duration", "60s", "--warmup", "0s", "--repeat", "1",
                "--connections", "2",
            ],
            stdout: null,
            stderr: errors.write,
            environment: environment,
            ownProcessGroup: true
        )
        close(errors.write)
        let output = Locked("")
        _ = spawnThread(name: "bench-stderr") {
            readUntilEnd(errors.read) { text in output.withLock { $0 += text } }
            close(errors.read)
        }
        // The bench's children are in its process group: this ends whatever the test leaves running.
        defer {
            kill(-bench.pid, SIGKILL)
            _ = bench.waitUntilExit()
        }
        // The round begins once its proxy listens (and has written its start-up lines).
        #expect(
            waitUntil(timeout: .seconds(30)) { !bench.isRunning || output.withLock { $0.contains("round 1 of 1") } }
        )
        try #require(bench.isRunning, "the bench ended before it was signalled: \(output.withLock { $0 })")
        let children = Self.processes { $0.parent == bench.pid }
        try #require(!children.isEmpty, "the bench has no child process to end")
        kill(bench.pid, SIGTERM)
        #expect(bench.wait(timeout: .seconds(30)) == .killed(signal: SIGTERM))
        let stillRunning = Self.processes { process in children.contains(process) && process.state != "Z" }
        #expect(stillRunning.isEmpty, "still running after the bench died: \(stillRunning)")
    }

    /// A process as /proc/PID/stat shows it; the start time tells a PID given to another apart.
    struct ProcessEntry: Equatable, CustomStringConvertible {
        let pid: pid_t
        let parent: pid_t
        let state: Substring
        let startTime: Substring
        static func == (a: Self, b: Self) -> Bool { a.pid == b.pid && a.startTime == b.startTime }
        var description: String { "\(self.pid) (state \(self.state))" }
    }

    static func processes(where matches: (ProcessEntry) -> Bool) -> [ProcessEntry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { name -> ProcessEntry? in
            guard let pid = pid_t(name),
                let text = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = text.lastIndex(of: ")")
            else { return nil }
            // After the command name: state (field 3), parent (4), ..., start time (22), as in proc(5).
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 19, let parent = pid_t(fields[1]) else { return nil }
            return ProcessEntry(pid: pid, parent: parent, state: fields[0], startTime: fields[19])
        }
        .filter(matches)
    }
}
