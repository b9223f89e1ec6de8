import BearerCore
import BearerHTTP
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerProxy
@testable import BearerSession

/// `token_command` is bounded by refresh_timeout: a command that hangs is killed with its whole
/// process group, its parked requests get their error, and the next refresh runs a fresh command.
@Suite struct TokenCommandTests {
    /// How the command hangs: `sleep` in place of the shell, or a background child that keeps the
    /// command's stdout open after the command itself has exited.
    enum Hang: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case inPlace
        case childHoldsStdout

        var testDescription: String { self.rawValue }

        /// A shell script that hangs while `directory/hang` exists (writing the hanging PID to
        /// `directory/pid`), and prints a token once it is gone.
        func script(in directory: String) -> String {
            let hang =
                switch self {
                case .inPlace: #"echo $$ > "$D/pid"; exec sleep 1000"#
                case .childHoldsStdout: #"sleep 1000 & echo $! > "$D/pid"; exit 0"#
                }
            return #"D='\#(directory)'; if [ -e "$D/hang" ]; then \#(hang); fi; echo cmd-token-after-hang"#
        }
    }

    @Test(arguments: Hang.allCases)
    func aHangingCommandIsKilledAtRefreshTimeoutAndTheNextRefreshRuns(_ hang: Hang) throws {
        let directory = try ScratchSpace.newDirectory("cmd")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.createFile(atPath: directory + "/hang", contents: nil))
        let fixture = try SessionFixture(acceptedTokens: ["cmd-token-after-hang"]) { config, _ in
            config.tokenURL = nil
            config.tokenCommand = ["/bin/sh", "-c", hang.script(in: directory)]
            config.refreshTimeout = .seconds(1)
        }
        // The start-up fetch runs the command, which hangs (the file exists before the shell writes it).
        var hangingPID: pid_t?
        #expect(
            waitUntil {
                let text = try? String(contentsOfFile: directory + "/pid", encoding: .utf8)
                hangingPID = text.flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                return hangingPID != nil
            }
        )
        let pid = try #require(hangingPID)
        defer { if isAlive(pid) { kill(pid, SIGKILL) } }

        let parkedAt = Instant.now()
        let parked = try fixture.get("/while-hanging")
        let waited = Instant.now() - parkedAt
        #expect(parked.status == 504)
        #expect(waited < .seconds(5), "the parked request waited \(waited) with refresh_timeout = 1s")
        #expect(parked.text.contains("refresh_timeout"))
        #expect(waitUntil { !isAlive(pid) }, "the hanging command (PID \(pid)) is still running")
        #expect(
            waitUntil { fixture.proxy.runtime.session.status.state != "refreshing" },
            "the session stayed refreshing"
        )

        // The command works again: the next request starts a new refresh and gets the token.
        try FileManager.default.removeItem(atPath: directory + "/hang")
        let after = try fixture.get("/after-hang")
        #expect(after.status == 200)
        #expect(fixture.upstream.requests.last?.header("authorization") == "Bearer cmd-token-after-hang")
        fixture.expectNoSecretsInLogs(["cmd-token-after-hang"])
    }
}

@Suite struct TokenCommandProcessTests {
    let deadline = Instant.now() + .seconds(20)

    @Test func collectsBothStreamsEvenWhenTheyFillTheirPipes() {
        // 200 KB on stderr before anything on stdout: reading one stream to its end first would
        // leave the command blocked on a full stderr pipe.
        let outcome = TokenCommandProcess.run(
            ["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x >&2; echo the-token"],
            deadline: self.deadline
        )
        guard case .exited(let status, let stdout, let stderr) = outcome else {
            Issue.record("unexpected outcome \(outcome)")
            return
        }
        #expect(status == 0)
        #expect(stdout == Array("the-token\n".utf8))
        #expect(stderr.count == 200_000 && stderr.allSatisfy { $0 == UInt8(ascii: "x") })
    }

    @Test func reportsTheExitStatusAndTheSignal() {
        #expect(
            TokenCommandProcess.run(["sh", "-c", "echo no >&2; exit 3"], deadline: self.deadline)
                == .exited(status: 3, stdout: [], stderr: Array("no\n".utf8))
        )
        #expect(
            TokenCommandProcess.run(["sh", "-c", "kill -9 $$"], deadline: self.deadline)
                == .killed(signal: SIGKILL, stderr: [])
        )
        #expect(
            TokenCommandProcess.run(["/nonexistent/token-tool"], deadline: self.deadline)
                == .cannotStart(reason: "No such file or directory")
        )
    }

    @Test func theCommandStartsWithDefaultSignalsAndNothingBlocked() {
        // SIGPIPE is ignored in the proxy; a command must not inherit that (nor a blocked SIGTERM).
        let outcome = TokenCommandProcess.run(
            ["sh", "-c", "grep -E '^(SigBlk|SigIgn)' /proc/self/status"],
            deadline: self.deadline
        )
        guard case .exited(0, let stdout, _) = outcome else {
            Issue.record("unexpected outcome \(outcome)")
            return
        }
        let lines = String(decoding: stdout, as: UTF8.self).split(separator: "\n")
        #expect(lines.contains("SigBlk:\t0000000000000000"), "\(lines)")
        let ignored = lines.first { $0.hasPrefix("SigIgn:") }.flatMap { UInt64($0.dropFirst(8), radix: 16) } ?? 0
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] {
            #expect(ignored & (1 << UInt64(signal - 1)) == 0, "signal \(signal) is ignored in the command")
        }
    }
}

/// Whether `pid` names a live process: not gone, and not a zombie waiting to be reaped.
func isAlive(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state != "Z" && state != "X"
}
