import BearerCore
import BearerIO
import Dispatch
import Glibc

/// What a program the tests ran printed, and how it ended.
package struct ProgramOutcome: Sendable {
    package var status: Int32
    package var standardOutput: String
    package var standardError: String
}

/// Runs `arguments` (the program's path first) in `directory` and reads both its outputs to their
/// end; a program that outlives `timeout` is killed by its PID. Its standard input is `input` (small
/// enough for a pipe's buffer, written whole before it starts), or `stdin` (a pipe a test steers the
/// program through; closed here), or else /dev/null. It gets this process's environment, or exactly
/// `environment` when given. `status` is the shell's `$?` (128 + N for a program killed by signal N).
///
/// Outputs are read with read(2) through `SystemCall`, which retries EINTR: FileHandle's reader
/// traps on it.
package func runProgram(
    _ arguments: [String],
    in directory: String? = nil,
    environment: [String: String]? = nil,
    stdin steered: Int32? = nil,
    input: String? = nil,
    timeout: Duration
) throws -> ProgramOutcome {
    let output = makeClosingPipe()
    let errors = makeClosingPipe()
    let stdin =
        input.map { text in
            let pipe = makeClosingPipe()
            try? SystemCall.writeAll(pipe.write, Array(text.utf8))
            close(pipe.write)
            return pipe.read
        } ?? steered
    defer { if let stdin { close(stdin) } }
    let child: ChildProcess
    do {
        child = try ChildProcess(
            arguments,
            stdin: stdin,
            stdout: output.write,
            stderr: errors.write,
            environment: environment,
            directory: directory
        )
    } catch {
        for fd in [output.read, output.write, errors.read, errors.write] { close(fd) }
        throw error
    }
    close(output.write)
    close(errors.write)
    let finished = DispatchGroup()
    let collected = Locked<([UInt8], [UInt8])>(([], []))
    for (fd, isError) in [(output.read, false), (errors.read, true)] {
        finished.enter()
        DispatchQueue.global().async {
            let bytes = readToEnd(fd)
            close(fd)
            collected.withLock { if isError { $0.1 = bytes } else { $0.0 = bytes } }
            finished.leave()
        }
    }
    if finished.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds))) == .timedOut {
        child.signal(SIGKILL)
        finished.wait()
    }
    let termination = child.waitUntilExit()
    let (out, err) = collected.withLock { $0 }
    return ProgramOutcome(
        status: termination.shellStatus,
        standardOutput: String(decoding: out, as: UTF8.self),
        standardError: String(decoding: err, as: UTF8.self)
    )
}

/// What a program wrote to the pipe (nothing, should reading it fail).
private func readToEnd(_ fd: Int32) -> [UInt8] {
    (try? SystemCall.readToEnd(fd, limit: .max)) ?? []
}

/// Reads `fd` until it ends, passing on what arrives: for a child's output read while it runs.
package func readUntilEnd(_ fd: Int32, _ received: (String) -> Void) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while let count = try? SystemCall.blocking("read", { read(fd, &buffer, buffer.count) }), count > 0 {
        received(String(decoding: buffer[..<count], as: UTF8.self))
    }
}
