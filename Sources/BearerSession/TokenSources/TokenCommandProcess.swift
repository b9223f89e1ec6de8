import BearerCore
import BearerIO
import CBearerLinux
import Glibc

/// One run of `token_command`: a child in its own process group, its stdout and stderr collected,
/// and the whole group killed when it has not finished by the deadline.
///
/// Why not Foundation's `Process`: it cannot put the child in a process group of its own, and
/// reading a pipe to its end blocks for as long as *any* process holds the write end (a shell's
/// background child, `sleep` in place of the shell). Here poll(2) waits on the pipes until the
/// deadline, then the child's end is waited for as an event (`ChildExit`), and at the deadline
/// `kill(-pgid, SIGKILL)` ends the command and everything it started.
/// Blocking: runs on the blocking-work pool, never on an event loop.
struct TokenCommandProcess {
    enum Outcome: Equatable {
        /// It exited with `status`; stdout and stderr as written (each bounded).
        case exited(status: Int32, stdout: [UInt8], stderr: [UInt8])
        /// A signal ended it (not ours).
        case killed(signal: Int32, stderr: [UInt8])
        /// The deadline passed; the process group was killed.
        case timedOut
        /// It could not be started (no such program, not executable …).
        case cannotStart(reason: String)
    }

    /// More output than a token response needs is read and dropped, so memory stays bounded.
    static let outputLimit = 1 << 20

    /// Runs `argv` (argv[0] searched in PATH when it has no slash) with stdin on /dev/null.
    static func run(_ argv: [String], deadline: Instant) -> Outcome {
        var stdoutPipe: [Int32] = [-1, -1]
        var stderrPipe: [Int32] = [-1, -1]
        guard cbl_pipe_cloexec(&stdoutPipe) == 0 else { return .cannotStart(reason: Self.errorText()) }
        guard cbl_pipe_cloexec(&stderrPipe) == 0 else {
            Self.closeAll(stdoutPipe)
            return .cannotStart(reason: Self.errorText())
        }
        let spawned = Result { () throws(SpawnFailure) in
            try spawnProcess(argv, stdout: stdoutPipe[1], stderr: stderrPipe[1], ownProcessGroup: true)
        }
        // The child has its own copies of the write ends; ours must go, or the reads never end.
        close(stdoutPipe[1])
        close(stderrPipe[1])
        defer {
            close(stdoutPipe[0])
            close(stderrPipe[0])
        }
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let failure): return .cannotStart(reason: failure.reason)
        }
        let exit = ChildExit(pid: pid)
        // The child is reaped last, after any signal to it: until then its PID, which is also the
        // group's ID, cannot have been reused, so the kill below reaches only what the command started.
        defer { reapChild(pid) }
        var output = CollectedOutput(stdout: stdoutPipe[0], stderr: stderrPipe[0])
        guard output.readUntilEnd(deadline: deadline), let termination = exit.wait(until: deadline) else {
            kill(-pid, SIGKILL)
            return .timedOut
        }
        switch termination {
        case .exited(let status): return .exited(status: status, stdout: output.stdoutBytes, stderr: output.stderrBytes)
        case .killed(let signal): return .killed(signal: signal, stderr: output.stderrBytes)
        }
    }

    private static func closeAll(_ fds: [Int32]) {
        for fd in fds where fd >= 0 { close(fd) }
    }

    private static func errorText() -> String {
        String(cString: strerror(errno))
    }
}

/// Reads a child's stdout and stderr as they come, both at once (a child blocked writing one while
/// we wait on the other would never finish), until both end or the deadline passes.
private struct CollectedOutput {
    let stdout: Int32
    let stderr: Int32
    var stdoutBytes: [UInt8] = []
    var stderrBytes: [UInt8] = []

    init(stdout: Int32, stderr: Int32) {
        self.stdout = stdout
        self.stderr = stderr
    }

    /// Whether both pipes ended before the deadline.
    mutating func readUntilEnd(deadline: Instant) -> Bool {
        var open: [Int32] = [self.stdout, self.stderr]
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while !open.isEmpty {
            let remaining = deadline - Instant.now()
            guard remaining > .zero else { return false }
            var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            // The time left is computed on each try: a signal must not restart the whole wait.
            let polled = try? SystemCall.blocking("poll") {
                poll(
                    &descriptors,
                    nfds_t(descriptors.count),
                    Int32(clamping: max(1, (deadline - Instant.now()).nanoseconds / 1_000_000))
                )
            }
            if polled == nil { return false }
            for descriptor in descriptors where descriptor.revents != 0 {
                let count = try? SystemCall.blocking("read") {
                    chunk.withUnsafeMutableBytes { read(descriptor.fd, $0.baseAddress, $0.count) }
                }
                if let count, count > 0 {
                    self.append(chunk[0..<count], from: descriptor.fd)
                } else {
                    // The end, or a pipe that failed: either way nothing more comes from it.
                    open.removeAll { $0 == descriptor.fd }
                }
            }
        }
        return true
    }

    private mutating func append(_ bytes: ArraySlice<UInt8>, from fd: Int32) {
        if fd == self.stdout {
            if self.stdoutBytes.count < TokenCommandProcess.outputLimit { self.stdoutBytes += bytes }
        } else if self.stderrBytes.count < TokenCommandProcess.outputLimit {
            self.stderrBytes += bytes
        }
    }
}
