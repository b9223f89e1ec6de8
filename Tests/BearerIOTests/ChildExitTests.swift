import BearerCore
import BearerIO
import Glibc
import Testing

/// A child's end is an event: a waiter wakes when the child ends or when its deadline passes, and
/// the child stays unreaped for its owner. Both ways: a pidfd, and the waitid thread used where
/// pidfd_open is refused.
@Suite struct ChildExitTests {
    static func spawn(_ script: String) throws -> pid_t {
        try spawnProcess(["/bin/sh", "-c", script], stdout: STDOUT_FILENO, stderr: STDERR_FILENO)
    }

    @Test(arguments: [true, false])
    func aWaitEndsWithTheChildAndLeavesItUnreaped(usesPIDFD: Bool) throws {
        let pid = try Self.spawn("exit 3")
        let exit = ChildExit(pid: pid, usesPIDFD: usesPIDFD)
        #expect(exit.wait(until: Instant.now() + .seconds(30)) == .exited(status: 3))
        // Still a zombie, so its PID is still its own; a second wait says the same at once.
        #expect(ChildTermination(waitingFor: pid, flags: WNOHANG) == .exited(status: 3))
        #expect(exit.wait(until: Instant.now()) == .exited(status: 3))
        reapChild(pid)
    }

    @Test(arguments: [true, false])
    func aWaitEndsAtItsDeadlineWhileTheChildRuns(usesPIDFD: Bool) throws {
        let pid = try Self.spawn("exec sleep 60")
        defer { reapChild(pid) }
        let exit = ChildExit(pid: pid, usesPIDFD: usesPIDFD)
        let started = Instant.now()
        #expect(exit.wait(until: started + .milliseconds(200)) == nil)
        #expect(Instant.now() - started >= .milliseconds(200))
        kill(pid, SIGKILL)
        #expect(exit.wait(until: Instant.now() + .seconds(30)) == .killed(signal: SIGKILL))
    }
}
