/// base64url without padding (RFC 7515 §2, RFC 4648 §5): how JWS encodes its three parts.
///
/// Written by hand over bytes, with no Foundation: DPoP proofs are encoded per request on the data path.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Appends the encoding of `bytes` to `output`.
    static func encode(_ bytes: some Collection<UInt8>, into output: inout [UInt8]) {
        output.reserveCapacity(output.count + (bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(Self.alphabet[Int(group >> 18 & 63)])
            output.append(Self.alphabet[Int(group >> 12 & 63)])
            if second != nil { output.append(Self.alphabet[Int(group >> 6 & 63)]) }
            if third != nil { output.append(Self.alphabet[Int(group & 63)]) }
        }
    }

    static func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        Self.encode(bytes, into: &output)
        return output
    }

    static func encodedString(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: Self.encode(bytes), as: UTF8.self)
    }
}
