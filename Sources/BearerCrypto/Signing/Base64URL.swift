import BearerCore

/// base64url without padding (RFC 7515 §2, RFC 4648 §5): how JWS encodes its three parts.
///
/// Written by hand over bytes, with no Foundation: DPoP proofs are encoded per request on the data
/// path, three input bytes to four characters at a time, straight into the outbound buffer.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The characters `count` bytes become (no padding).
    static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Writes the encoding of `bytes` at `output`, which has room for `encodedCount(bytes.count)`
    /// bytes; returns that count.
    static func encode(_ bytes: UnsafeRawBufferPointer, to start: UnsafeMutableRawPointer) -> Int {
        let output = UnsafeMutableRawBufferPointer(start: start, count: Self.encodedCount(bytes.count))
        return Self.alphabet.withUnsafeBufferPointer { alphabet in
            var input = 0
            var written = 0
            while input + 3 <= bytes.count {
                let group = UInt32(bytes[input]) << 16 | UInt32(bytes[input + 1]) << 8 | UInt32(bytes[input + 2])
                output[written] = alphabet[Int(group >> 18)]
                output[written + 1] = alphabet[Int(group >> 12 & 63)]
                output[written + 2] = alphabet[Int(group >> 6 & 63)]
                output[written + 3] = alphabet[Int(group & 63)]
                input += 3
                written += 4
            }
            let left = bytes.count - input
            if left > 0 {
                let second = left == 2 ? UInt32(bytes[input + 1]) : 0
                let group = UInt32(bytes[input]) << 16 | second << 8
                output[written] = alphabet[Int(group >> 18)]
                output[written + 1] = alphabet[Int(group >> 12 & 63)]
                written += 2
                if left == 2 {
                    output[written] = alphabet[Int(group >> 6 & 63)]
                    written += 1
                }
            }
            return written
        }
    }

    /// Appends the encoding of `bytes` to `output`.
    static func encode(_ bytes: some Collection<UInt8>, into output: inout [UInt8]) {
        let input = Array(bytes)
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: Self.encodedCount(input.count)))
        output.withUnsafeMutableBufferPointer { output in
            input.withUnsafeBytes { _ = Self.encode($0, to: UnsafeMutableRawPointer(output.baseAddress! + start)) }
        }
    }

    static func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        Self.encode(bytes, into: &output)
        return output
    }

    package static func encodedString(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: Self.encode(bytes), as: UTF8.self)
    }
}

extension ByteBuffer {
    /// Writes the base64url encoding of `bytes` (no padding).
    mutating func writeBase64URL(_ bytes: UnsafeRawBufferPointer) {
        let count = Base64URL.encodedCount(bytes.count)
        guard count > 0 else { return }
        _ = self.writeWithUnsafeMutableBytes(minimumWritable: count) { output in
            Base64URL.encode(bytes, to: output.baseAddress!)
        }
    }
}
