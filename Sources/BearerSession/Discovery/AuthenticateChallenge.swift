/// The one parameter of a `WWW-Authenticate` field the proxy reads: RFC 9728 §5.1's
/// `resource_metadata`, the URL of the protected resource's metadata, in a `Bearer` challenge.
package enum AuthenticateChallenge {
    /// The `resource_metadata` of the first `Bearer` challenge among `values` (each a field value) that
    /// has one; nil when none does. The value is a quoted string (RFC 9110 §5.6.4, backslash escapes)
    /// or a token.
    package static func resourceMetadata(in values: [String]) -> String? {
        for value in values {
            var scanner = Scanner(Array(value.utf8))
            var inBearer = false
            while let item = scanner.next() {
                if let scheme = item.scheme { inBearer = scheme.lowercased() == "bearer" }
                if inBearer, let (key, text) = item.parameter, key.lowercased() == "resource_metadata" {
                    return text
                }
            }
        }
        return nil
    }

    /// Reads the items of a field value in order (RFC 9110 §11.6.1): `scheme`, `scheme name=value`
    /// (a new challenge) and `name=value` (a parameter of the current one).
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        private static func isTokenByte(_ byte: UInt8) -> Bool {
            byte > 0x20 && byte < 0x7F && !"\",;=()<>@:\\/[]?{}".utf8.contains(byte)
        }

        private var atEquals: Bool { self.index < self.bytes.count && self.bytes[self.index] == 0x3D }

        private mutating func skip(_ bytes: String) {
            while self.index < self.bytes.count, bytes.utf8.contains(self.bytes[self.index]) { self.index += 1 }
        }

        private mutating func token() -> String {
            let start = self.index
            while self.index < self.bytes.count, Self.isTokenByte(self.bytes[self.index]) { self.index += 1 }
            return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
        }

        /// After `=`: a quoted string without its quotes and escapes, or a token.
        private mutating func value() -> String {
            self.index += 1
            self.skip(" \t")
            guard self.index < self.bytes.count, self.bytes[self.index] == 0x22 else { return self.token() }
            var text: [UInt8] = []
            self.index += 1
            while self.index < self.bytes.count, self.bytes[self.index] != 0x22 {
                if self.bytes[self.index] == 0x5C, self.index + 1 < self.bytes.count { self.index += 1 }
                text.append(self.bytes[self.index])
                self.index += 1
            }
            self.index += 1
            return String(decoding: text, as: UTF8.self)
        }

        /// The next item, or nil at the end of the value.
        mutating func next() -> (scheme: String?, parameter: (String, String)?)? {
            self.skip(" \t,")
            guard self.index < self.bytes.count else { return nil }
            let first = self.token()
            guard !first.isEmpty else {
                self.index += 1  // a byte no item starts with
                return (nil, nil)
            }
            self.skip(" \t")
            if self.atEquals { return (nil, (first, self.value())) }
            let start = self.index
            let name = self.token()
            self.skip(" \t")
            if !name.isEmpty && self.atEquals { return (first, (name, self.value())) }
            self.index = start  // a scheme alone, or followed by a token68 read as the next item
            return (first, nil)
        }
    }
}
