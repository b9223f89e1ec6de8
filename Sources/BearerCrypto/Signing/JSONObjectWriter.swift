/// A JSON object written member by member straight into bytes: the headers and claims of the JWTs
/// the proxy signs.
///
/// Members come out in the order they are added, each name once (the caller's business). No
/// Foundation: a DPoP proof's claims are written per request on the data path.
package struct JSONObjectWriter: Sendable {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    package init() {}

    /// A writer whose bytes have room for `capacity` before they grow (a DPoP proof's claims).
    package init(reservingCapacity capacity: Int) {
        self.bytes.reserveCapacity(capacity)
    }

    package mutating func add(_ name: String, _ value: String) {
        self.addName(name)
        Self.appendString(value.utf8, to: &self.bytes)
    }

    /// A string member whose value is UTF-8 bytes already (a request's method and target, on the data path).
    package mutating func add(_ name: String, bytes value: some Collection<UInt8>) {
        self.addName(name)
        Self.appendString(value, to: &self.bytes)
    }

    package mutating func add(_ name: String, _ value: Int64) {
        self.addName(name)
        self.bytes.append(contentsOf: String(value).utf8)
    }

    /// A nested object (a JWS header's `jwk`).
    package mutating func add(_ name: String, _ object: JSONObjectWriter) {
        self.addName(name)
        self.bytes.append(contentsOf: object.encoded)
    }

    /// The whole object, `{…}`.
    package var encoded: [UInt8] {
        var bytes = self.bytes
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// The whole object to `body`, without the copy `encoded` makes: the writer is used up.
    package consuming func withEncodedBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        self.bytes.append(UInt8(ascii: "}"))
        return self.bytes.withUnsafeBytes(body)
    }

    private mutating func addName(_ name: String) {
        if self.bytes.count > 1 { self.bytes.append(UInt8(ascii: ",")) }
        Self.appendString(name.utf8, to: &self.bytes)
        self.bytes.append(UInt8(ascii: ":"))
    }

    /// A JSON string (RFC 8259 §7): quote, backslash and control characters escaped, the rest as UTF-8.
    private static func appendString(_ text: some Collection<UInt8>, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Names, methods, URLs, nonces and hashes need no escape: copied whole.
        if !text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            bytes.append(contentsOf: text)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 15)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
