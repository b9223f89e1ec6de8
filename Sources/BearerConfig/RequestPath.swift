/// A request path as the `allow` and `deny` rules see it: its segments after percent-decoding of
/// unreserved characters, removal of dot segments (RFC 3986 §6.2.2.2, §5.2.4) and of empty segments.
///
/// The point is that a rule cannot be walked around: `/v1/../admin`, `/v1/%2e%2e/admin` and
/// `/v1/./../admin` are `/admin`, and `//admin` is `/admin` (most servers merge slashes, so a deny
/// rule must too). What is not unreserved stays encoded, its hex digits upper-cased: `%2F` inside a
/// segment is not a slash, and such a segment never matches a wildcard (`containsEncodedSlash`).
/// The query and a fragment are not part of the path.
package struct RequestPath: Equatable, Sendable, CustomStringConvertible {
    /// Never empty segments; `/` is no segment at all (a trailing slash is not one either).
    package let segments: [String]

    /// `target`: an origin-form request-target (a query is cut off); `*` and anything not starting
    /// with `/` is kept as one segment that no pattern names.
    package init(_ target: some StringProtocol) {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        guard path.hasPrefix("/") else {
            self.segments = path.isEmpty ? [] : [String(path)]
            return
        }
        var output: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            let segment = Self.decodingUnreserved(raw)
            switch segment {
            case ".": continue
            case "..": _ = output.popLast()
            default: output.append(segment)
            }
        }
        self.segments = output
    }

    /// `/a/b`, as matched; `/` for no segment.
    package var description: String {
        "/" + self.segments.joined(separator: "/")
    }

    /// Whether a segment holds an encoded slash (`%2F`): one segment to a rule, two to many servers.
    static func containsEncodedSlash(_ segment: String) -> Bool {
        segment.utf8.count >= 3 && segment.contains("%2F")
    }

    /// `%41` → `A`, `%7e` → `~`: unreserved characters decoded (RFC 3986 §2.3), every other escape
    /// kept with its hex upper-cased, so two spellings of one path compare equal.
    static func decodingUnreserved(_ segment: some StringProtocol) -> String {
        let bytes = Array(segment.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                let byte = high << 4 | low
                if isUnreserved(byte) {
                    output.append(byte)
                } else {
                    output.append(contentsOf: [UInt8(ascii: "%"), upperHex(high), upperHex(low)])
                }
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

private func upperHex(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
}

private func isUnreserved(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"):
        true
    default: false
    }
}
