import BearerCore
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerCLI

/// Real programs some tests talk to (`ExternalTool`: what is looked for, and the skip reason naming it).
enum ExternalTools {
    /// Debian's python3 (`/usr/bin/python3`: the `python3` first on PATH may be another build
    /// without Debian's packages) with the `websockets` package (python3-websockets).
    static var debianPython: String { ExternalTool.pythonWebSockets.program }

    /// Debian's curl: a TLS client that is not our code, trusting only what it is told to.
    static var curl: String { ExternalTool.curl.program }

    typealias Outcome = ProgramOutcome

    /// Runs `arguments`, killing it (by PID) if it outlives `timeout`.
    static func run(_ arguments: [String], timeout: Duration) throws -> Outcome {
        try runProgram(arguments, timeout: timeout)
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test (or suite) when `tool` is installed, or under CI; otherwise skips it with the
    /// reason naming what was checked and the Debian package that provides it.
    static func requires(_ tool: ExternalTool) -> Self {
        .enabled(if: tool.isInstalledOrCI, Comment(rawValue: tool.skipReason))
    }
}
