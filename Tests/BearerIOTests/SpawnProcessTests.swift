import BearerIO
import BearerTestSupport
import Glibc
import Testing

/// What a spawned program starts with: only its stdin, stdout and stderr of this process's descriptors.
@Suite struct SpawnProcessTests {
    /// A descriptor opened without O_CLOEXEC (as Foundation's temporary files are) does not reach
    /// the child: inherited, it kept a script being written busy, and running it failed with
    /// 'text file busy' (exit 126) when another test spawned a program at that moment.
    @Test func aDescriptorWithoutCloseOnExecIsNotInherited() throws {
        var descriptors: [Int32] = [-1, -1]
        try #require(pipe(&descriptors) == 0)
        // Far above what ls itself opens, so the two cannot be mistaken for each other.
        let inheritable = fcntl(descriptors[1], F_DUPFD, 200)
        defer { (descriptors + [inheritable]).forEach { close($0) } }
        try #require(inheritable >= 200)
        let outcome = try runProgram(["/bin/sh", "-c", "ls /proc/self/fd"], timeout: .seconds(30))
        #expect(outcome.status == 0)
        let open = Set(outcome.standardOutput.split(separator: "\n").compactMap { Int32($0) })
        // 0, 1, 2 and the descriptor ls reads /proc/self/fd through.
        #expect(open.isSubset(of: [0, 1, 2, 3]), "open in the child: \(open.sorted())")
        #expect(!open.contains(inheritable), "the pipe's write end reached the child")
    }
}
