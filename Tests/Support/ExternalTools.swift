import Testing

/// Real programs some tests talk to (`ExternalTool`: what is looked for, and the skip reason naming it).
package enum ExternalTools {
    /// Debian's python3 (`/usr/bin/python3`: the `python3` first on PATH may be another build
    /// without Debian's packages) with the `websockets` package (python3-websockets).
    package static var debianPython: String { ExternalTool.pythonWebSockets.program }

    /// Debian's curl: a TLS client that is not our code, trusting only what it is told to.
    package static var curl: String { ExternalTool.curl.program }

    package typealias Outcome = ProgramOutcome

    /// Runs `arguments`, killing it (by PID) if it outlives `timeout`.
    package static func run(_ arguments: [String], timeout: Duration) throws -> Outcome {
        try runProgram(arguments, timeout: timeout)
    }

    /// curl trusting `caFile` alone (`--cacert`) for `https://HOST:PORT/whoami` with HOST resolved to
    /// 127.0.0.1: the status code on stdout, the handshake (`-v`) on stderr.
    package static func curl(trusting caFile: String, host: String, port: Int) throws -> Outcome {
        let url = host.contains(":") ? "https://[\(host)]:\(port)/whoami" : "https://\(host):\(port)/whoami"
        return try Self.run(
            [
                Self.curl, "-sS", "-v", "--max-time", "10", "--cacert", caFile,
                "--resolve", "\(host):\(port):127.0.0.1", "-o", "/dev/null", "-w", "%{http_code}", url,
            ],
            timeout: .seconds(20)
        )
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test (or suite) when `tool` is installed, or under CI; otherwise skips it with the
    /// reason naming what was checked and the Debian package that provides it.
    package static func requires(_ tool: ExternalTool) -> Self {
        .enabled(if: tool.isInstalledOrCI, Comment(rawValue: tool.skipReason))
    }
}
