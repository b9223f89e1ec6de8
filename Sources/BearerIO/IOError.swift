import Glibc

/// A system call failed for a reason of the environment (refused, reset, no such file), not a bug.
package struct IOError: Error, Equatable, Sendable, CustomStringConvertible {
    package var errnoCode: Int32
    package var function: String
    /// Words that say more than errno can (a TLS failure's cause).
    package var detail: String?
    /// What went wrong in a TLS session, when that is what failed.
    package var tlsFailure: TLSFailure?

    package init(errnoCode: Int32, function: String, detail: String? = nil) {
        self.errnoCode = errnoCode
        self.function = function
        self.detail = detail
    }

    /// A TLS failure, in words a person can act on.
    package static func tls(_ failure: TLSFailure) -> IOError {
        var error = IOError(errnoCode: EPROTO, function: "TLS", detail: failure.description)
        error.tlsFailure = failure
        return error
    }

    package var isTLSFailure: Bool { self.tlsFailure != nil }

    /// `strerror` in a sentence: "connect: Connection refused".
    package var description: String {
        "\(self.function): \(self.reason)"
    }

    /// The system's words for the error alone: "Connection refused".
    package var reason: String {
        self.detail ?? String(cString: strerror(self.errnoCode))
    }

}
