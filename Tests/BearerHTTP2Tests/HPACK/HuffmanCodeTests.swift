import Testing

@testable import BearerHTTP2

/// The canonical code of RFC 7541 Appendix B, and the decoder's refusals (§5.2).
@Suite struct HuffmanCodeTests {
    static func decode(_ input: [UInt8], limit: Int = 1 << 20) throws(HPACKError) -> [UInt8] {
        var output: [UInt8] = []
        try input.withUnsafeBytes { raw in
            Result { () throws(HPACKError) in try HuffmanCode.decode(raw, into: &output, limit: limit) }
        }.get()
        return output
    }

    /// Rows of Appendix B, as printed there (code right-aligned, length): the derivation reproduces them.
    @Test(
        arguments: [
            (0x00, 0x1ff8, 13), (0x20, 0x14, 6), (0x30, 0x0, 5), (0x61, 0x3, 5), (0x7f, 0xffffffc, 28),
            (0xff, 0x3ffffee, 26), (0x0a, 0x3ffffffc, 30), (256, 0x3fffffff, 30),
        ] as [(Int, UInt32, Int)]
    )
    func derivedCodesMatchAppendixB(symbol: Int, code: UInt32, length: Int) {
        #expect(HuffmanCode.codes[symbol] == code)
        #expect(Int(HuffmanCode.lengths[symbol]) == length)
    }

    @Test func everyByteRoundTrips() throws {
        let all = (0...255).map(UInt8.init)
        var encoded: [UInt8] = []
        HuffmanCode.encode(all, into: &encoded)
        #expect(encoded.count == HuffmanCode.encodedCount(all))
        #expect(try Self.decode(encoded) == all)
        for byte in all {
            var one: [UInt8] = []
            HuffmanCode.encode([byte], into: &one)
            #expect(try Self.decode(one) == [byte], "byte \(byte)")
        }
    }

    @Test func anEmptyStringIsNoBytes() throws {
        #expect(try Self.decode([]) == [])
    }

    /// EOS (thirty one-bits) inside a string is an error, even though it is a valid code.
    @Test func endOfStringSymbolIsRefused() {
        #expect(throws: HPACKError.huffmanEndOfString) { try Self.decode([0xff, 0xff, 0xff, 0xff]) }
    }

    /// Padding of 8 or more ones ('0' is 00000, then eleven ones) is refused: §5.2 allows at most 7.
    @Test func paddingLongerThanSevenBitsIsRefused() {
        #expect(throws: HPACKError.huffmanInvalidPadding) { try Self.decode([0x07, 0xff]) }
        // 'a' (00011) then a whole byte of padding.
        #expect(throws: HPACKError.huffmanInvalidPadding) { try Self.decode([0x1f, 0xff]) }
    }

    /// Padding that is not the EOS prefix (a zero bit in it) is refused: '0' then 000.
    @Test func paddingThatIsNotAllOnesIsRefused() throws {
        #expect(throws: HPACKError.huffmanInvalidPadding) { try Self.decode([0x00]) }
        #expect(throws: HPACKError.huffmanInvalidPadding) { try Self.decode([0x06]) }  // 00000 110
        #expect(try Self.decode([0x07]) == bytes("0"))  // 00000 111
    }

    @Test func outputPastTheLimitIsRefused() {
        var encoded: [UInt8] = []
        HuffmanCode.encode(bytes("aaaaaaaaaa"), into: &encoded)
        #expect(throws: HPACKError.headerListTooLarge(limit: 9)) { try Self.decode(encoded, limit: 9) }
    }
}
