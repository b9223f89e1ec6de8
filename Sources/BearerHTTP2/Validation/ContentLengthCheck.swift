/// Counts a stream's DATA against its declared content-length (RFC 9113 §8.1.1): a message whose
/// DATA passes the declared length, or ends short of it, is malformed.
///
/// The check fails as soon as the DATA passes the length, before those bytes are forwarded; a
/// shortfall can only be known at END_STREAM. Responses to HEAD and 304 responses declare a length
/// they do not carry (RFC 9110 §8.6): their check is made with `declared: nil`.
package struct ContentLengthCheck: Equatable, Sendable {
    package let declared: Int?
    package private(set) var received = 0

    package init(declared: Int?) {
        self.declared = declared
    }

    /// DATA of `count` bytes (padding excluded) arrived.
    package mutating func dataReceived(_ count: Int) throws(HeaderValidationError) {
        self.received += count
        if let declared = self.declared, self.received > declared {
            throw .contentLengthMismatch(declared: declared, received: self.received)
        }
    }

    /// The stream ended (END_STREAM).
    package func streamEnded() throws(HeaderValidationError) {
        if let declared = self.declared, self.received != declared {
            throw .contentLengthMismatch(declared: declared, received: self.received)
        }
    }
}
