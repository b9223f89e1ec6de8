import Glibc

/// The one wrapper around system calls: a call a signal interrupted (`EINTR`) is made again here,
/// and nowhere else in the project.
///
/// Callers pick the variant for their descriptor. `blocking` serves threads that may wait (a config
/// file's `read`, the log thread's `write`, a child's `waitpid`, the signal thread's `sigwaitinfo`):
/// the call's result, or a `SystemCallError` naming the call; `readToEnd` and `writeAll` are the
/// whole-file loops built on it. BearerIO's `nonBlocking` serves sockets on an event loop: `EAGAIN` is
/// "would block", not an error. All of them retry through `retryingInterrupts` (NIO's `System.swift`
/// does the same with its `syscall(blocking:where:_:)`).
///
/// Public and inlinable for one reason: this compiler inlines across modules only public inlinable
/// bodies, and the transports call it on every read and send of the data path.
public enum SystemCall {
    /// How a call ended once no signal interrupted it.
    public enum Completion<Result: SignedInteger> {
        /// The call's non-negative result.
        case returned(Result)
        /// The call failed with this `errno` (never `EINTR`).
        case failed(errno: Int32)
    }

    /// Runs `call` (a system call returning -1 and setting `errno` on failure) until a signal does not
    /// interrupt it.
    @inlinable @inline(__always)
    public static func retryingInterrupts<Result: SignedInteger>(_ call: () -> Result) -> Completion<Result> {
        while true {
            let result = call()
            if result >= 0 { return .returned(result) }
            let code = errno
            if code != EINTR { return .failed(errno: code) }
        }
    }

    /// Runs `call` on a thread that may wait: its result, or the failure naming `function`.
    @inlinable
    public static func blocking<Result: SignedInteger>(
        _ function: StaticString,
        _ call: () -> Result
    ) throws(SystemCallError) -> Result {
        switch Self.retryingInterrupts(call) {
        case .returned(let result): return result
        case .failed(let code): throw SystemCallError(function: function, errnoCode: code)
        }
    }
}

/// A system call failed for a reason of the environment (no such file, permission denied, a full
/// disk), not a bug: what callers turn into their own error, in a person's words.
public struct SystemCallError: Error, Sendable, CustomStringConvertible {
    public var function: StaticString
    public var errnoCode: Int32

    @inlinable
    public init(function: StaticString, errnoCode: Int32) {
        self.function = function
        self.errnoCode = errnoCode
    }

    /// The system's words for the error alone: "No such file or directory".
    public var reason: String { String(cString: strerror(self.errnoCode)) }

    /// "open: No such file or directory".
    public var description: String { "\(self.function): \(self.reason)" }
}
