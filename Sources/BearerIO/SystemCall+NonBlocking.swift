import BearerCore
import Glibc

/// System calls on non-blocking descriptors: the transports' reads, sends and shutdowns, and the
/// listener's accepts.
///
/// `EAGAIN` (the socket has nothing to read, or no room to write) is not an error but `.wouldBlock`;
/// any other failure throws an `IOError` naming the call. `EINTR` is retried by the one loop every
/// variant shares (`SystemCall.retryingInterrupts`, BearerCore), so no transport hand-writes it.
///
/// Inlined: on the data path it costs what the hand-written loop cost.
extension SystemCall {
    package enum Outcome: Equatable {
        /// The call's non-negative result (bytes read or sent; 0 from `read` is the end of the stream;
        /// a descriptor from `accept4`).
        case completed(Int)
        /// The descriptor is non-blocking and the call would have had to wait.
        case wouldBlock
    }

    /// Runs `call` (a system call returning -1 and setting `errno` on failure) until it is not
    /// interrupted.
    @inline(__always)
    package static func nonBlocking<Result: SignedInteger>(
        _ function: StaticString,
        _ call: () -> Result
    ) throws(IOError) -> Outcome {
        switch Self.retryingInterrupts(call) {
        case .returned(let result): return .completed(Int(result))
        case .failed(errno: EAGAIN): return .wouldBlock
        case .failed(let code): throw IOError(errnoCode: code, function: "\(function)")
        }
    }
}

extension IOError {
    /// A blocking call's failure, in the socket layer's error.
    package init(_ error: SystemCallError) {
        self.init(errnoCode: error.errnoCode, function: "\(error.function)")
    }
}
