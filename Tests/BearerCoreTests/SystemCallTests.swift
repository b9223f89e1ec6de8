import BearerTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@testable import BearerCore

/// How many times the test's SIGURG handler ran.
private let interruptions = Atomic<Int>(0)

/// Whether the thread named `name` is asleep in the kernel.
private func threadIsSleeping(named name: String) -> Bool {
    ProcessThread.all(of: "self").contains { $0.name == name && $0.isAsleep }
}

/// The one system-call wrapper: a call a signal interrupts is made again; any other failure names
/// the call; the whole-contents loops built on it read and write everything.
@Suite struct SystemCallTests {
    @Test func aCallInterruptedBySignalsIsMadeAgainUntilItReturns() {
        var calls = 0
        let completion = SystemCall.retryingInterrupts { () -> Int in
            calls += 1
            guard calls == 3 else {
                errno = EINTR
                return -1
            }
            return 42
        }
        guard case .returned(42) = completion else {
            Issue.record("expected the third call's result, got \(completion)")
            return
        }
        #expect(calls == 3)
    }

    @Test func anotherFailureIsThrownNamingTheCall() {
        var calls = 0
        #expect(throws: SystemCallError.self) {
            try SystemCall.blocking("open") { () -> Int32 in
                calls += 1
                errno = ENOENT
                return -1
            }
        }
        #expect(calls == 1)
        let error = SystemCallError(function: "open", errnoCode: ENOENT)
        #expect(error.description == "open: No such file or directory")
    }

    /// A real signal, delivered to a thread blocked in `read` (a handler installed without
    /// SA_RESTART, so the kernel returns EINTR): the read goes on and everything written arrives.
    @Test func aReadASignalInterruptsGoesOnToTheEnd() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        try #require(sigaction(SIGURG, &action, &previous) == 0)
        defer { sigaction(SIGURG, &previous, nil) }

        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let result = Locked<Result<[UInt8], SystemCallError>?>(nil)
        let readerFD = fds[0]
        let name = "eintr-" + String(UInt32.random(in: 0..<0xFF_FFFF), radix: 16)
        let reader = spawnThread(name: name) {
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, SIGURG)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            let read = Result { () throws(SystemCallError) in try SystemCall.readToEnd(readerFD, limit: 1 << 20) }
            result.withLock { $0 = read }
        }
        // Three signals, each once the reader is asleep in its read (nothing is written yet), each
        // waited for until its handler ran: the read is interrupted three times.
        for _ in 0..<3 {
            let handled = interruptions.load(ordering: .relaxed)
            #expect(waitUntil { threadIsSleeping(named: name) }, "the reader never blocked")
            pthread_kill(reader, SIGURG)
            #expect(waitUntil { interruptions.load(ordering: .relaxed) > handled }, "the signal was not handled")
        }
        let message = Array("after the signals\n".utf8)
        try SystemCall.writeAll(fds[1], message)
        close(fds[1])
        joinThread(reader)
        let bytes = try #require(result.withLock { $0 }).get()
        #expect(bytes == message)
    }

    @Test func readToEndStopsPastTheLimit() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        try SystemCall.writeAll(fds[1], [UInt8](repeating: 0x61, count: 40_000))
        close(fds[1])
        let bytes = try SystemCall.readToEnd(fds[0], limit: 10_000)
        // More than the limit says there was more; reading stops within a chunk of it.
        #expect(bytes.count > 10_000 && bytes.count < 40_000)
    }

    @Test func writeAllToAPipeWithoutAReaderThrowsItsErrorAndNothingWentOut() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        var written = -1
        let outcome = [UInt8](repeating: 0x61, count: 100).withUnsafeBytes { raw in
            written = 0
            return Result { () throws(SystemCallError) in try SystemCall.writeAll(fds[1], raw, written: &written) }
        }
        guard case .failure(let error) = outcome else {
            Issue.record("a write without a reader succeeded")
            return
        }
        #expect(error.errnoCode == EPIPE)
        #expect(error.description == "write: Broken pipe")
        #expect(written == 0)
    }
}
