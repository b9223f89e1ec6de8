import Testing

@testable import BearerHTTP2

/// RFC 7541 Appendix C, every example: the encoder's bytes byte for byte, the decoder's lists and
/// its dynamic table (entries newest first, and size) after each block.
@Suite struct HPACKAppendixCTests {
    struct Step {
        var fields: [(String, String)]
        var indexing: HPACKIndexing = .incremental
        var block: String
        var table: [(String, String)]
        var tableSize: Int
    }

    static func check(_ steps: [Step], tableSize: Int = 4096, huffman: HPACKEncoder.HuffmanPolicy) throws {
        var encoder = HPACKEncoder(maxTableSize: tableSize, huffman: huffman)
        var decoder = HPACKDecoder(maxTableSize: tableSize, maxHeaderListSize: 65_536)
        for (number, step) in steps.enumerated() {
            var list = HeaderList()
            for (name, value) in step.fields {
                list.append(name: bytes(name), value: bytes(value), indexing: step.indexing)
            }
            var encoded: [UInt8] = []
            encoder.encode(list, into: &encoded)
            #expect(encoded == hex(step.block), "block \(number + 1) encoded")
            #expect(encoder.tableEntries.elementsEqual(step.table, by: ==), "block \(number + 1) encoder table")
            #expect(encoder.tableSize == step.tableSize)

            let decoded = try decoder.decode(hex(step.block))
            #expect(decoded.strings.elementsEqual(step.fields, by: ==), "block \(number + 1) decoded")
            #expect(decoded.fields.allSatisfy { $0.indexing == step.indexing || $0.indexing == .incremental })
            #expect(decoder.tableEntries.elementsEqual(step.table, by: ==), "block \(number + 1) decoder table")
            #expect(decoder.tableSize == step.tableSize)
        }
    }

    /// One step per block of an example: its list, its bytes, and the table after it.
    static func steps(
        _ lists: [[(String, String)]],
        _ blocks: [String],
        _ tables: [[(String, String)]],
        _ sizes: [Int]
    ) -> [Step] {
        lists.indices.map { Step(fields: lists[$0], block: blocks[$0], table: tables[$0], tableSize: sizes[$0]) }
    }

    /// C.2: one field each, raw strings, from an empty table.
    @Test(arguments: [
        (
            "C.2.1 literal with indexing", "custom-key", "custom-header", HPACKIndexing.incremental,
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572", 55
        ),
        (
            "C.2.2 literal without indexing", ":path", "/sample/path", .withoutIndexing,
            "040c 2f73 616d 706c 652f 7061 7468", 0
        ),
        (
            "C.2.3 literal never indexed", "password", "secret", .neverIndexed,
            "1008 7061 7373 776f 7264 0673 6563 7265 74", 0
        ),
        ("C.2.4 indexed field", ":method", "GET", .incremental, "82", 0),
    ])
    func c2SingleFields(
        _ id: String,
        name: String,
        value: String,
        indexing: HPACKIndexing,
        block: String,
        size: Int
    ) throws {
        let table = size == 0 ? [] : [(name, value)]
        let step = Step(fields: [(name, value)], indexing: indexing, block: block, table: table, tableSize: size)
        try Self.check([step], huffman: .never)
        var decoder = HPACKDecoder(maxHeaderListSize: 1000)
        #expect(try decoder.decode(hex(block)).fields[0].indexing == indexing, "\(id)")
    }

    static let requests: [[(String, String)]] = [
        [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
        [
            (":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"),
            ("cache-control", "no-cache"),
        ],
        [
            (":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ],
    ]
    static let requestTables: [[(String, String)]] = [
        [(":authority", "www.example.com")],
        [("cache-control", "no-cache"), (":authority", "www.example.com")],
        [("custom-key", "custom-value"), ("cache-control", "no-cache"), (":authority", "www.example.com")],
    ]

    /// C.3 (raw strings) and C.4 (Huffman): three requests on one connection.
    @Test(arguments: [
        (
            HPACKEncoder.HuffmanPolicy.never,
            [
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                "8286 84be 5808 6e6f 2d63 6163 6865",
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            ]
        ),
        (
            .unlessLonger,
            [
                "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                "8286 84be 5886 a8eb 1064 9cbf",
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            ]
        ),
    ])
    func c3AndC4Requests(huffman: HPACKEncoder.HuffmanPolicy, blocks: [String]) throws {
        try Self.check(Self.steps(Self.requests, blocks, Self.requestTables, [57, 110, 164]), huffman: huffman)
    }

    static let date1 = "Mon, 21 Oct 2013 20:13:21 GMT"
    static let date2 = "Mon, 21 Oct 2013 20:13:22 GMT"
    static let location = "https://www.example.com"
    static let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
    static let responses: [[(String, String)]] = [
        [(":status", "302"), ("cache-control", "private"), ("date", date1), ("location", location)],
        [(":status", "307"), ("cache-control", "private"), ("date", date1), ("location", location)],
        [
            (":status", "200"), ("cache-control", "private"), ("date", date2), ("location", location),
            ("content-encoding", "gzip"), ("set-cookie", cookie),
        ],
    ]
    static let responseTables: [[(String, String)]] = [
        [("location", location), ("date", date1), ("cache-control", "private"), (":status", "302")],
        [(":status", "307"), ("location", location), ("date", date1), ("cache-control", "private")],
        [("set-cookie", cookie), ("content-encoding", "gzip"), ("date", date2)],
    ]

    /// C.5 (raw strings) and C.6 (Huffman): three responses with SETTINGS_HEADER_TABLE_SIZE 256, so
    /// entries are evicted.
    @Test(arguments: [
        (
            HPACKEncoder.HuffmanPolicy.never,
            [
                "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32"
                    + "3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                "4803 3330 37c1 c0bf",
                "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970"
                    + "7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178"
                    + "2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
            ]
        ),
        (
            .unlessLonger,
            [
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad"
                    + "1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                "4883 640e ffc1 c0bf",
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2"
                    + "e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ]
        ),
    ])
    func c5AndC6Responses(huffman: HPACKEncoder.HuffmanPolicy, blocks: [String]) throws {
        let steps = Self.steps(Self.responses, blocks, Self.responseTables, [222, 222, 215])
        try Self.check(steps, tableSize: 256, huffman: huffman)
    }

    /// C.1: integers with 5- and 8-bit prefixes.
    @Test(arguments: [(10, 5, [0x0a]), (1337, 5, [0x1f, 0x9a, 0x0a]), (42, 8, [0x2a])] as [(Int, Int, [UInt8])])
    func c1Integers(value: Int, prefixBits: Int, encoded: [UInt8]) throws {
        var output: [UInt8] = []
        HPACKInteger.write(value, prefixBits: prefixBits, flags: 0, into: &output)
        #expect(output == encoded)
        var position = 0
        let read = try encoded.withUnsafeBytes { raw in
            Result { () throws(HPACKError) in try HPACKInteger.read(raw, at: &position, prefixBits: prefixBits) }
        }.get()
        #expect(read == value)
        #expect(position == encoded.count)
    }
}
