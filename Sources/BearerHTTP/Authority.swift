/// A `host[:port]` as byte ranges: from a Host field, an absolute-form target or a CONNECT target.
///
/// Only host names a resolver could look up are accepted (letters, digits, `-._~`, or a bracketed IPv6
/// literal): anything else, a comma or `@` above all, is a sign of an attack or a confused client.
package struct Authority: Equatable, Sendable {
    /// The host as written, brackets of an IPv6 literal included.
    package var host: Range<Int>
    package var port: Int?

    /// Parses `range` of `bytes`; nil when it is not a valid authority.
    package static func parse(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Authority? {
        guard !range.isEmpty else { return nil }
        var index = range.lowerBound
        let hostStart = index
        if bytes[index] == UInt8(ascii: "[") {
            index += 1
            while index < range.upperBound && bytes[index] != UInt8(ascii: "]") {
                let byte = bytes[index]
                guard byte.hexDigitValue != nil || byte == ASCII.colon || byte == UInt8(ascii: ".") else { return nil }
                index += 1
            }
            guard index < range.upperBound, index - hostStart > 2 else { return nil }
            index += 1
        } else {
            while index < range.upperBound && bytes[index] != ASCII.colon {
                guard bytes[index].isHostNameCharacter else { return nil }
                index += 1
            }
            guard index > hostStart else { return nil }
        }
        let host = hostStart..<index
        if index == range.upperBound { return Authority(host: host, port: nil) }
        guard bytes[index] == ASCII.colon else { return nil }
        index += 1
        if index == range.upperBound { return Authority(host: host, port: nil) }
        guard range.upperBound - index <= 5 else { return nil }
        var port = 0
        while index < range.upperBound {
            guard bytes[index].isDigit else { return nil }
            port = port * 10 + Int(bytes[index] &- 0x30)
            index += 1
        }
        guard port > 0, port <= 65535 else { return nil }
        return Authority(host: host, port: port)
    }
}

extension UInt8 {
    @inline(__always) var isHostNameCharacter: Bool {
        (self >= 0x61 && self <= 0x7A) || (self >= 0x41 && self <= 0x5A) || self.isDigit
            || self == UInt8(ascii: "-") || self == UInt8(ascii: ".") || self == UInt8(ascii: "_")
            || self == UInt8(ascii: "~")
    }
}
