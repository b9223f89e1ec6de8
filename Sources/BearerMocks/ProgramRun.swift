import BearerCore
import Dispatch
import Foundation
import Glibc

/// What a program the tests ran printed, and how it ended.
package struct ProgramOutcome: Sendable {
    package var status: Int32
    package var standardOutput: String
    package var standardError: String
}

/// Runs `arguments` (the program's path first) in `directory`, with no input, and reads both its
/// outputs to their end; a program that outlives `timeout` is killed by its PID. It gets this
/// process's environment, or exactly `environment` when given.
///
/// Outputs are read with read(2), retried on EINTR: FileHandle's reader traps on it.
package func runProgram(
    _ arguments: [String],
    in directory: String? = nil,
    environment: [String: String]? = nil,
    timeout: Duration
) throws -> ProgramOutcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    if let environment { process.environment = environment }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let finished = DispatchGroup()
    let collected = Locked<([UInt8], [UInt8])>(([], []))
    for (pipe, isError) in [(output, false), (errors, true)] {
        finished.enter()
        DispatchQueue.global().async {
            let bytes = readToEnd(pipe.fileHandleForReading.fileDescriptor)
            collected.withLock { if isError { $0.1 = bytes } else { $0.0 = bytes } }
            finished.leave()
        }
    }
    if finished.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds))) == .timedOut {
        kill(process.processIdentifier, SIGKILL)
        finished.wait()
    }
    process.waitUntilExit()
    let (out, err) = collected.withLock { $0 }
    return ProgramOutcome(
        status: process.terminationStatus,
        standardOutput: String(decoding: out, as: UTF8.self),
        standardError: String(decoding: err, as: UTF8.self)
    )
}

private func readToEnd(_ fd: Int32) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return bytes }
        bytes += chunk[..<count]
    }
}
