import BearerHTTP

/// A request's header list that passed RFC 9113 §8.2 and §8.3, with its pseudo-header values found.
///
/// What an HTTP/2 stream hands the exchange in place of an HTTP/1.1 request head: the method, the
/// target's three parts (`:scheme`, `:authority` or else `host`, `:path`), the declared
/// content-length, and the regular fields after the pseudo-headers.
package struct HTTP2RequestHead: Equatable, Sendable {
    package var list: HeaderList
    package var method: HTTPMethod
    package var methodRange: Range<Int>
    /// nil for CONNECT (§8.5).
    package var scheme: Range<Int>?
    /// `:authority`, or the `host` field when there is none (§8.3.1).
    package var authority: Range<Int>?
    /// nil for CONNECT (§8.5).
    package var path: Range<Int>?
    package var contentLength: Int?
    /// The index of the first regular field: the pseudo-headers come before it.
    package var firstRegularField: Int

    /// Validates a decoded request header list.
    ///
    /// Every request has exactly one `:method`, `:scheme` and `:path`, `:path` being origin-form (or
    /// `*` for OPTIONS); CONNECT has `:method` and `:authority` only (§8.5; extended CONNECT,
    /// RFC 8441, is not offered, so `:protocol` is unknown). `:authority` is a `host[:port]` without
    /// userinfo, and a `host` field, if any, must say the same (§8.3.1: the proxy routes by it, and
    /// two names for one request are how a confused deputy is made).
    package init(validating list: HeaderList) throws(HeaderValidationError) {
        self.list = list
        var method: Range<Int>?
        var scheme: Range<Int>?
        var authority: Range<Int>?
        var path: Range<Int>?
        let (firstRegular, semantics) = try list.bytes.withUnsafeBytesTypedThrows {
            (bytes) throws(HeaderValidationError) -> (Int, FieldRules.Semantics) in
            let count = FieldRules.pseudoHeaderCount(bytes, list.fields)
            for field in list.fields[..<count] {
                func take(_ slot: inout Range<Int>?, _ name: String) throws(HeaderValidationError) {
                    if slot != nil { throw .duplicatePseudoHeader(name) }
                    slot = field.value
                }
                try FieldRules.checkValue(bytes, field.value)
                switch PseudoHeader(bytes, field.name) {
                case .method: try take(&method, ":method")
                case .scheme: try take(&scheme, ":scheme")
                case .authority: try take(&authority, ":authority")
                case .path: try take(&path, ":path")
                case .status: throw .pseudoHeaderNotAllowed(":status")
                case nil: throw .unknownPseudoHeader
                }
            }
            return (count, try FieldRules.checkRegularFields(bytes, list.fields[count...]))
        }
        guard let method else { throw .missingPseudoHeader(":method") }
        self.methodRange = method
        self.firstRegularField = firstRegular
        self.contentLength = semantics.contentLength
        let (parsedMethod, host) = try list.bytes.withUnsafeBytesTypedThrows {
            (bytes) throws(HeaderValidationError) -> (HTTPMethod, Range<Int>?) in
            guard method.allSatisfy({ bytes[$0].isTokenCharacter }), !method.isEmpty else { throw .invalidMethod }
            let parsed = HTTPMethod(bytes, method)
            try Self.checkTarget(bytes, parsed, scheme: scheme, authority: authority, path: path)
            if let host = semantics.host, let authority {
                guard host.count == authority.count,
                    zip(host, authority).allSatisfy({ bytes[$0].asciiLowercased == bytes[$1].asciiLowercased })
                else {
                    throw .hostDiffersFromAuthority
                }
            }
            if authority == nil, let host = semantics.host, Authority.parse(bytes, host) == nil {
                throw .invalidAuthority
            }
            return (parsed, semantics.host)
        }
        self.method = parsedMethod
        self.scheme = scheme
        self.authority = authority ?? host
        self.path = path
    }

    private static func checkTarget(
        _ bytes: UnsafeRawBufferPointer,
        _ method: HTTPMethod,
        scheme: Range<Int>?,
        authority: Range<Int>?,
        path: Range<Int>?
    ) throws(HeaderValidationError) {
        if let authority, Authority.parse(bytes, authority) == nil { throw .invalidAuthority }
        if method == .connect {
            if scheme != nil { throw .pseudoHeaderNotAllowed(":scheme") }
            if path != nil { throw .pseudoHeaderNotAllowed(":path") }
            if authority == nil { throw .missingPseudoHeader(":authority") }
            return
        }
        guard let scheme else { throw .missingPseudoHeader(":scheme") }
        guard let path else { throw .missingPseudoHeader(":path") }
        guard let first = scheme.first, bytes[first].isASCIILetter,
            scheme.allSatisfy({
                bytes[$0].isASCIILetter || bytes[$0].isDigit || bytes[$0] == 0x2b || bytes[$0] == 0x2d
                    || bytes[$0] == 0x2e
            })
        else { throw .invalidScheme }
        guard let start = path.first, path.allSatisfy({ bytes[$0].isTargetCharacter }) else { throw .invalidPath }
        let isAsterisk = path.count == 1 && bytes[start] == UInt8(ascii: "*")
        guard bytes[start] == UInt8(ascii: "/") || (isAsterisk && method == .options) else { throw .invalidPath }
    }
}

/// The pseudo-header fields RFC 9113 §8.3 defines.
enum PseudoHeader {
    case method, scheme, authority, path, status

    init?(_ bytes: UnsafeRawBufferPointer, _ name: Range<Int>) {
        func matches(_ text: StaticString) -> Bool {
            text.utf8CodeUnitCount == name.count
                && zip(name, 0..<name.count).allSatisfy { bytes[$0] == text.utf8Start[$1] }
        }
        if matches(":method") {
            self = .method
        } else if matches(":scheme") {
            self = .scheme
        } else if matches(":authority") {
            self = .authority
        } else if matches(":path") {
            self = .path
        } else if matches(":status") {
            self = .status
        } else {
            return nil
        }
    }
}

extension UInt8 {
    var isASCIILetter: Bool { (self >= 0x41 && self <= 0x5a) || (self >= 0x61 && self <= 0x7a) }
}
