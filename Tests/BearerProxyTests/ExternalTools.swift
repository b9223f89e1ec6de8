import BearerCore
import BearerMocks
import Foundation
import Glibc

/// Real programs some tests talk to. On a developer's machine a missing one skips its tests with a
/// line naming the Debian package; under CI (`CI=true`, where `.ci/run` installs them) the tests run
/// and fail instead, so nothing is skipped there.
enum ExternalTools {
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Debian's python3 (`/usr/bin/python3`: the `python3` first on PATH may be another build
    /// without Debian's packages) with the `websockets` package (python3-websockets).
    static let debianPython = "/usr/bin/python3"

    static let hasPythonWebSockets: Bool = {
        (try? run([debianPython, "-c", "import websockets"], timeout: .seconds(20)))?.status == 0
    }()

    static var pythonWebSocketsOrCI: Bool { hasPythonWebSockets || isCI }

    /// Debian's redis-server (the session store's real peer).
    static var redisServerOrCI: Bool { RedisServerProcess.executable != nil || isCI }

    /// Debian's curl: a TLS client that is not our code, trusting only what it is told to.
    static let curl = "/usr/bin/curl"

    static var curlOrCI: Bool { access(curl, X_OK) == 0 || isCI }

    typealias Outcome = ProgramOutcome

    /// Runs `arguments`, killing it (by PID) if it outlives `timeout`.
    static func run(_ arguments: [String], timeout: Duration) throws -> Outcome {
        try runProgram(arguments, timeout: timeout)
    }
}
