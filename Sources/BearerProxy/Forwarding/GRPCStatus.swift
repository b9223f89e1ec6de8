import BearerCore
import BearerHTTP
import BearerHTTP2

/// What the proxy reads of gRPC (docs/grpc.md): a call is a request whose `content-type` is
/// `application/grpc` or `application/grpc+…`, and its outcome is the `grpc-status` of its trailers,
/// or of its only HEADERS frame when the answer is Trailers-Only.
enum GRPC {
    /// UNAUTHENTICATED: gRPC's 401.
    static let unauthenticated = 16
    /// UNAVAILABLE: what a client may retry.
    static let unavailable = 14

    /// The gRPC status for an HTTP status, as the gRPC HTTP/2 protocol document maps them
    /// (doc/http-grpc-status-mapping.md): what a local failure ends a call with.
    static func status(forHTTPStatus status: Int) -> Int {
        switch status {
        case 400: 13  // INTERNAL
        case 401: unauthenticated
        case 403: 7  // PERMISSION_DENIED
        case 404: 12  // UNIMPLEMENTED
        case 429, 502, 503, 504: unavailable
        default: 2  // UNKNOWN
        }
    }

    /// The `grpc-status` in a chunked body's trailer section (`name: value` lines).
    static func status(inTrailerSection section: [UInt8]) -> Int? {
        for line in section.split(separator: 0x0A) {
            let line = line.last == 0x0D ? line.dropLast() : line
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
                line[..<colon].lazy.map({ $0 | 0x20 }).elementsEqual("grpc-status".utf8)
            else { continue }
            return Int(String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingBlanks())
        }
        return nil
    }

    /// `grpc-message`'s encoding (PROTOCOL-HTTP2.md): bytes outside printable ASCII, and `%`,
    /// percent-encoded.
    static func message(_ text: String) -> String {
        PercentEncoding.encode(text) { $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "%") }
    }

    /// A `grpc-timeout` value (PROTOCOL-HTTP2.md: up to 8 digits and a unit, H M S m u n); nil when
    /// it is not one, and it then goes on untouched.
    static func timeout(_ value: some BidirectionalCollection<UInt8>) -> Duration? {
        guard let unit = value.last, (2...9).contains(value.count) else { return nil }
        var amount: Int64 = 0
        for byte in value.dropLast() {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            amount = amount * 10 + Int64(byte - 0x30)
        }
        switch unit {
        case UInt8(ascii: "H"): return .seconds(amount * 3600)
        case UInt8(ascii: "M"): return .seconds(amount * 60)
        case UInt8(ascii: "S"): return .seconds(amount)
        case UInt8(ascii: "m"): return .milliseconds(amount)
        case UInt8(ascii: "u"): return .microseconds(amount)
        case UInt8(ascii: "n"): return .nanoseconds(amount)
        default: return nil
        }
    }

    /// `duration` as a `grpc-timeout` value in the finest unit that fits 8 digits, rounded up; at
    /// least `1n` (a deadline already past is the server's to report).
    static func timeoutValue(_ duration: Duration) -> String {
        let nanoseconds = max(
            duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000,
            1
        )
        for (unit, size) in [
            ("n", Int64(1)), ("u", 1_000), ("m", 1_000_000), ("S", 1_000_000_000), ("M", 60_000_000_000),
        ] {
            let amount = (nanoseconds + size - 1) / size
            if amount <= 99_999_999 { return "\(amount)\(unit)" }
        }
        return "\((nanoseconds + 3_599_999_999_999) / 3_600_000_000_000)H"
    }

    /// Whether a `content-type` value names gRPC (`application/grpc`, `application/grpc+proto`, …).
    static func isGRPCContentType(_ value: some Collection<UInt8>) -> Bool {
        let prefix = "application/grpc".utf8
        guard value.count >= prefix.count else { return false }
        let lowered = value.lazy.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
        guard lowered.starts(with: prefix) else { return false }
        let rest = lowered.dropFirst(prefix.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "+") || rest.first == UInt8(ascii: ";")
    }
}

extension RequestHead {
    /// A gRPC call. Every call carries `te: trailers` (PROTOCOL-HTTP2.md), a field the parser knows:
    /// other requests are told apart without reading a value.
    var isGRPC: Bool {
        guard self.fields.contains(where: { $0.knownName == .te }) else { return false }
        return self.value(of: "content-type").map { GRPC.isGRPCContentType($0.utf8) } ?? false
    }
}

extension ResponseHead {
    /// A Trailers-Only UNAUTHENTICATED (`:status 200`, a gRPC `content-type`, `grpc-status: 16`, and
    /// nothing after it): as an HTTP/2 upstream stream writes it into its pipe, a head with an empty
    /// body. Only an empty 200 is looked at further, so other answers pay one comparison.
    var isGRPCUnauthenticated: Bool {
        guard self.status == 200, self.contentLength == 0 else { return false }
        guard let contentType = self.value(of: "content-type"), GRPC.isGRPCContentType(contentType.utf8) else {
            return false
        }
        return self.value(of: "grpc-status") == "\(GRPC.unauthenticated)"
    }
}

extension ResponseHead {
    /// A Trailers-Only answer's `grpc-status` (an empty body; other heads pay one comparison).
    var grpcStatus: Int? {
        guard self.contentLength == 0 else { return nil }
        return self.value(of: "grpc-status").flatMap { Int($0) }
    }
}

extension HeaderList {
    /// Trailers that end a call with UNAUTHENTICATED.
    var endsWithGRPCUnauthenticated: Bool {
        self.fields.indices.contains { index in
            self.name(index).elementsEqual("grpc-status".utf8)
                && self.value(index).elementsEqual("\(GRPC.unauthenticated)".utf8)
        }
    }
}
