extension HuffmanCode {
    /// How many bytes `string` takes Huffman-coded, padding included.
    static func encodedCount(_ string: some Collection<UInt8>) -> Int {
        var bits = 0
        for byte in string { bits += Int(self.lengths[Int(byte)]) }
        return (bits + 7) / 8
    }

    /// Appends `string` Huffman-coded, padded to a byte with the high bits of EOS (ones, §5.2).
    static func encode(_ string: some Collection<UInt8>, into output: inout [UInt8]) {
        var pending: UInt64 = 0
        var pendingBits = 0
        for byte in string {
            let length = Int(self.lengths[Int(byte)])
            pending = (pending << UInt64(length)) | UInt64(self.codes[Int(byte)])
            pendingBits += length
            while pendingBits >= 8 {
                pendingBits -= 8
                output.append(UInt8(truncatingIfNeeded: pending >> UInt64(pendingBits)))
            }
        }
        if pendingBits > 0 {
            let padding = 8 - pendingBits
            output.append(UInt8(truncatingIfNeeded: (pending << UInt64(padding)) | ((1 << UInt64(padding)) - 1)))
        }
    }

    /// Appends the decoding of `input` to `output`, refusing to let `output` grow past `limit` bytes.
    ///
    /// Canonical decoding, one bit at a time: a code of length n is complete when it lies within that
    /// length's run of codes. The string must not contain EOS, and what is left after the last symbol
    /// must be fewer than 8 bits, all ones (RFC 7541 §5.2): anything else is an error, not ignored, so
    /// that two decoders never disagree about a string.
    static func decode(
        _ input: UnsafeRawBufferPointer,
        into output: inout [UInt8],
        limit: Int
    ) throws(HPACKError) {
        var code: UInt32 = 0
        var length = 0
        for byte in input {
            var bit = 7
            while bit >= 0 {
                code = (code << 1) | UInt32((byte >> UInt8(bit)) & 1)
                length += 1
                bit -= 1
                let row = self.rows[length]
                guard row.count > 0, code >= row.firstCode, code - row.firstCode < row.count else {
                    if length >= self.longestCode { throw .huffmanEndOfString }
                    continue
                }
                let symbol = self.symbolsByCode[row.firstSymbol + Int(code - row.firstCode)]
                if symbol == self.endOfString { throw .huffmanEndOfString }
                if output.count >= limit { throw .headerListTooLarge(limit: limit) }
                output.append(UInt8(symbol))
                code = 0
                length = 0
            }
        }
        if length > 7 || code != (1 << UInt32(length)) - 1 { throw .huffmanInvalidPadding }
    }
}
