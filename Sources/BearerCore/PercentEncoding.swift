/// Percent-encoding (RFC 3986 §2.1) without Foundation: the binary links FoundationEssentials only,
/// which has neither `addingPercentEncoding(withAllowedCharacters:)` nor `removingPercentEncoding`.
package enum PercentEncoding {
    /// ALPHA / DIGIT / `-` `.` `_` `~` (RFC 3986 §2.3): never encoded.
    package static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
    }

    /// What may stand unencoded in a URL's user name: unreserved and sub-delims (RFC 3986 §3.2.1),
    /// Foundation's `.urlUserAllowed`.
    package static func isUserAllowed(_ byte: UInt8) -> Bool {
        self.isUnreserved(byte) || Array("!$&'()*+,;=".utf8).contains(byte)
    }

    /// `text` with every UTF-8 byte that `keeps` refuses written `%XX` (upper-case hex).
    package static func encode(_ text: String, keeping keeps: (UInt8) -> Bool = isUnreserved) -> String {
        var encoded = ""
        for byte in text.utf8 {
            if keeps(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return encoded
    }

    /// `text` with each `%XX` replaced by its byte; nil when a `%` is not followed by two hex digits
    /// or the bytes are not UTF-8 (as Foundation's `removingPercentEncoding`).
    package static func decode(_ text: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard input.count >= 2, let high = hexValue(input.removeFirst()), let low = hexValue(input.removeFirst())
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
