import Testing

@testable import BearerHTTP2

/// The decoder's refusals and bounds, and the table size updates on both sides (RFC 7541 §4, §6.3).
@Suite struct HPACKDecoderTests {
    static func decodeError(_ block: [UInt8], tableSize: Int = 4096, listSize: Int = 65_536) -> HPACKError? {
        var decoder = HPACKDecoder(maxTableSize: tableSize, maxHeaderListSize: listSize)
        do {
            _ = try decoder.decode(block)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        ("index 0", "80", HPACKError.indexZero),
        ("index past the empty dynamic table", "be", .indexOutOfRange(62)),
        ("name index past the tables", "7f 01 01 61", .indexOutOfRange(64)),
        ("literal cut in its value", "41 05 6162", .truncated),
        ("literal cut before its value", "41", .truncated),
        ("integer cut in its continuation", "ff", .truncated),
        ("integer past 2^31-1", "ff ff ff ff ff 0f", .integerTooLarge),
        ("integer of endless zero continuations", "ff 80 80 80 80 80 80 01", .integerTooLarge),
        ("size update past the setting", "3f e2 1f", .tableSizeUpdateTooLarge(4097, limit: 4096)),
        ("size update after a field", "82 20", .tableSizeUpdateAfterField),
        ("Huffman value with EOS", "41 84 ffff ffff", .huffmanEndOfString),
        ("Huffman value with a zero in its padding", "41 81 00", .huffmanInvalidPadding),
    ])
    func malformedBlocksAreRefused(_ id: String, block: String, error: HPACKError) {
        #expect(Self.decodeError(hex(block)) == error, "\(id)")
    }

    /// Each refusal names what was wrong in a sentence, never the header bytes.
    @Test func errorsReadAsSentences() {
        #expect(
            HPACKError.indexOutOfRange(70).message == "HPACK index 70 is in neither the static nor the dynamic table"
        )
        #expect(HPACKError.headerListTooLarge(limit: 100).message == "decoded header list larger than 100 bytes")
    }

    /// An HPACK bomb: one 4 000-byte entry, then a block of one-byte references to it. The decoder
    /// stops at the bound instead of materializing 4 000 bytes per byte of input.
    @Test func referencesToALargeEntryStopAtTheListBound() throws {
        var decoder = HPACKDecoder(maxHeaderListSize: 16_384)
        var block = hex("40 01 78 7f 82 1e")  // x: <3 969 bytes>, indexed incrementally
        block += [UInt8](repeating: 0x61, count: 3_969)
        let first = try decoder.decode(block)
        #expect(first.size == 1 + 3_969 + 32)
        #expect(decoder.tableSize == 1 + 3_969 + 32)
        let bomb = [UInt8](repeating: 0xbe, count: 10_000)  // index 62, again and again
        #expect(throws: HPACKError.headerListTooLarge(limit: 16_384)) { try decoder.decode(bomb) }
        let justFits = [UInt8](repeating: 0xbe, count: 4)
        #expect(try decoder.decode(justFits).fields.count == 4)
    }

    /// A raw literal longer than what is left of the bound is refused before it is copied.
    @Test func aLiteralPastTheBoundIsRefused() {
        var block = hex("40 01 78 7f 82 1e") + [UInt8](repeating: 0x61, count: 3_969)
        #expect(Self.decodeError(block, listSize: 4_000) == .headerListTooLarge(limit: 4_000))
        block = hex("40 01 78 7f 82 1e")  // declares 3 969 bytes and sends none
        #expect(Self.decodeError(block, listSize: 65_536) == .truncated)
    }

    /// A Huffman literal is bounded by its decoded size, not its encoded one.
    @Test func aHuffmanLiteralPastTheBoundIsRefused() {
        var value: [UInt8] = []
        HuffmanCode.encode([UInt8](repeating: 0x30, count: 200), into: &value)  // 5 bits each: 125 bytes
        var block = hex("40 01 78")
        HPACKInteger.write(value.count, prefixBits: 7, flags: 0x80, into: &block)
        block += value
        #expect(Self.decodeError(block, listSize: 200) == .headerListTooLarge(limit: 200))
        #expect(Self.decodeError(block, listSize: 233) == nil)
    }

    /// Lowering SETTINGS_HEADER_TABLE_SIZE obliges the next block to start with an update within it.
    @Test func aLoweredSettingRequiresAnUpdateFirst() throws {
        var decoder = HPACKDecoder(maxHeaderListSize: 65_536)
        _ = try decoder.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"))
        #expect(decoder.tableSize == 55)
        decoder.setMaxTableSize(0)
        var copy = decoder
        #expect(throws: HPACKError.tableSizeUpdateMissing) { try copy.decode(hex("82")) }
        copy = decoder
        #expect(throws: HPACKError.tableSizeUpdateTooLarge(100, limit: 0)) { try copy.decode(hex("3f 45 82")) }
        let list = try decoder.decode(hex("20 82"))
        #expect(list.strings.elementsEqual([(":method", "GET")], by: ==))
        #expect(decoder.tableSize == 0)
        #expect(decoder.tableEntries.isEmpty)
    }

    /// An update to zero then back up (both at the start of one block) empties the table (§4.2).
    @Test func updatesAtTheStartOfABlockEvict() throws {
        var decoder = HPACKDecoder(maxHeaderListSize: 65_536)
        _ = try decoder.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"))
        _ = try decoder.decode(hex("20 3f e1 1f 82"))
        #expect(decoder.tableSize == 0)
        #expect(throws: HPACKError.indexOutOfRange(62)) { try decoder.decode(hex("be")) }
    }

    /// The encoder signals a lowered peer setting at the start of its next block, the smallest size
    /// first when it went down and up again (§4.2), and evicts to it.
    @Test func theEncoderSignalsSizeChanges() throws {
        var encoder = HPACKEncoder()
        var decoder = HPACKDecoder(maxHeaderListSize: 65_536)
        var block: [UInt8] = []
        encoder.encode(HeaderList([("custom-key", "custom-header")]), into: &block)
        _ = try decoder.decode(block)

        encoder.setMaxTableSize(0)
        encoder.setMaxTableSize(2048)
        #expect(encoder.tableSize == 0)
        block = []
        encoder.encode(HeaderList([(":method", "GET")]), into: &block)
        #expect(block == hex("20 3f e1 0f 82"))
        _ = try decoder.decode(block)
        #expect(decoder.tableSize == 0)

        encoder.setMaxTableSize(100)
        block = []
        encoder.encode(HeaderList([(":method", "GET")]), into: &block)
        #expect(block == hex("3f 45 82"))
        block = []
        encoder.encode(HeaderList([(":method", "GET")]), into: &block)
        #expect(block == hex("82"), "signalled once")
    }

    /// The encoder's own limit caps what the peer may ask for.
    @Test func theEncoderKeepsItsOwnLimit() {
        var encoder = HPACKEncoder(ownLimit: 1024)
        encoder.setMaxTableSize(65_536)
        var block: [UInt8] = []
        encoder.encode(HeaderList([(":method", "GET")]), into: &block)
        #expect(block == hex("3f e1 07 82"))
    }

    /// `authorization` goes out never-indexed whatever the list asks, and never enters a table (§7.1.3).
    @Test func authorizationIsAlwaysNeverIndexed() throws {
        var encoder = HPACKEncoder(huffman: .never)
        var block: [UInt8] = []
        encoder.encode(HeaderList([("authorization", "Bearer t0k3n")]), into: &block)
        // 0001 1111, 0000 1000: never indexed, name index 15 + 8 (authorization), then the value.
        #expect(block == hex("1f 08 0c") + bytes("Bearer t0k3n"))
        #expect(encoder.tableSize == 0)
        var decoder = HPACKDecoder(maxHeaderListSize: 65_536)
        let list = try decoder.decode(block)
        #expect(list.fields[0].indexing == .neverIndexed)
        #expect(decoder.tableSize == 0)
        // Sent twice: still a literal the second time, never an index.
        block = []
        encoder.encode(HeaderList([("authorization", "Bearer t0k3n")]), into: &block)
        #expect(block == hex("1f 08 0c") + bytes("Bearer t0k3n"))
    }

    /// A field too large for the table empties it and is not added (§4.4), on both sides alike.
    @Test func anEntryLargerThanTheTableEmptiesIt() throws {
        var encoder = HPACKEncoder(maxTableSize: 64, huffman: .never)
        var decoder = HPACKDecoder(maxTableSize: 64, maxHeaderListSize: 65_536)
        for list in [HeaderList([("a", "b")]), HeaderList([("big", String(repeating: "v", count: 40))])] {
            var block: [UInt8] = []
            encoder.encode(list, into: &block)
            _ = try decoder.decode(block)
            #expect(encoder.tableEntries.elementsEqual(decoder.tableEntries, by: ==))
        }
        #expect(decoder.tableSize == 0)
    }
}
