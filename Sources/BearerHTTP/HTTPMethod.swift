/// The request methods the proxy treats specially, identified once while parsing.
///
/// The method's bytes are forwarded as received; this only tells the proxy what the method implies
/// (HEAD responses have no body, CONNECT asks for a tunnel, which methods are safe to retry).
package enum HTTPMethod: Equatable, Sendable {
    case get, head, post, put, delete, patch, options, trace, connect, other

    package init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        // Methods are case-sensitive (RFC 9110 §9.1).
        func matches(_ name: StaticString) -> Bool {
            guard range.count == name.utf8CodeUnitCount else { return false }
            return memcmp(bytes.baseAddress! + range.lowerBound, name.utf8Start, range.count) == 0
        }
        switch range.count {
        case 3: self = matches("GET") ? .get : matches("PUT") ? .put : .other
        case 4: self = matches("HEAD") ? .head : matches("POST") ? .post : .other
        case 5: self = matches("PATCH") ? .patch : matches("TRACE") ? .trace : .other
        case 6: self = matches("DELETE") ? .delete : .other
        case 7: self = matches("OPTIONS") ? .options : matches("CONNECT") ? .connect : .other
        default: self = .other
        }
    }

    /// Idempotent methods (RFC 9110 §9.2.2) may be resent when a reused connection turns out dead.
    package var isIdempotent: Bool {
        switch self {
        case .get, .head, .put, .delete, .options, .trace: true
        case .post, .patch, .connect, .other: false
        }
    }
}

/// Public, with a public inlinable `==`, as `ByteBuffer` is: this compiler inlines across modules
/// only public inlinable bodies, and the proxy compares versions on every request (through the
/// synthesized conformance's witness, about 30 instructions a comparison).
public enum HTTPVersion: Equatable, Sendable {
    case http10
    case http11

    @inlinable
    public static func == (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        switch (lhs, rhs) {
        case (.http10, .http10), (.http11, .http11): true
        case (.http10, _), (.http11, _): false
        }
    }

    @inlinable
    public static func != (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { !(lhs == rhs) }
}

#if canImport(Glibc)
import Glibc
#endif
