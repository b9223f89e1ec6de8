import Glibc

/// The one wrapper around system calls on non-blocking descriptors.
///
/// A call interrupted by a signal (`EINTR`) is made again; `EAGAIN` (the socket has nothing to read,
/// or no room to write) is not an error but `.wouldBlock`; any other failure throws an `IOError`
/// naming the call. Every transport's reads, sends and shutdowns go through here, so none of them
/// hand-writes the loop; the other hand-written `EINTR` loops of the project are to move here too
/// (NIO's `System.swift` does the same with its `syscall(blocking:where:_:)`).
///
/// Inlined: on the data path it costs what the hand-written loop cost.
package enum SystemCall {
    package enum Outcome: Equatable {
        /// The call's non-negative result (bytes read or sent; 0 from `read` is the end of the stream).
        case completed(Int)
        /// The descriptor is non-blocking and the call would have had to wait.
        case wouldBlock
    }

    /// Runs `call` (a system call returning -1 and setting `errno` on failure) until it is not
    /// interrupted.
    @inline(__always)
    package static func nonBlocking(_ function: StaticString, _ call: () -> Int) throws(IOError) -> Outcome {
        while true {
            let result = call()
            if result >= 0 { return .completed(result) }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            default: throw IOError(errnoCode: code, function: "\(function)")
            }
        }
    }

    /// The same for calls that return an `Int32` status (`shutdown`, `setsockopt`, …).
    @inline(__always)
    package static func nonBlocking(_ function: StaticString, _ call: () -> Int32) throws(IOError) -> Outcome {
        try Self.nonBlocking(function) { () -> Int in Int(call()) }
    }
}
