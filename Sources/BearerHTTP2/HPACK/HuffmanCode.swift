/// The static Huffman code of HPACK string literals (RFC 7541 §5.2, Appendix B).
///
/// Appendix B's code is canonical: the codes follow from the lengths alone (shorter first, then by
/// symbol, each the previous plus one, shifted left when the length grows). So only the 257 lengths
/// are transcribed, laid out sixteen symbols to a row as the appendix counts them, and the codes are
/// derived; a mis-typed length breaks the derivation's own check (the code must end exactly at EOS =
/// thirty one-bits) and every Appendix C example, rather than one rare byte.
enum HuffmanCode {
    /// The length in bits of each symbol's code: bytes 0–255, then EOS (256).
    static let lengths: [UInt8] = [
        13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,  // 0x00
        28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,  // 0x10
        6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,  // 0x20 ' ' to '/'
        5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,  // 0x30 '0' to '?'
        13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,  // 0x40 '@' to 'O'
        7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,  // 0x50 'P' to '_'
        15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,  // 0x60 '`' to 'o'
        6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,  // 0x70 'p' to DEL
        20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,  // 0x80
        24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,  // 0x90
        22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,  // 0xa0
        21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,  // 0xb0
        26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,  // 0xc0
        19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,  // 0xd0
        20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,  // 0xe0
        26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,  // 0xf0
        30,  // EOS
    ]

    static let endOfString = 256
    static let longestCode = 30

    /// Each symbol's code, right-aligned, derived canonically from `lengths`.
    static let codes: [UInt32] = {
        let order = (0...256).sorted { (lengths[$0], $0) < (lengths[$1], $1) }
        var codes = [UInt32](repeating: 0, count: 257)
        var code: UInt32 = 0
        var length = lengths[order[0]]
        for (position, symbol) in order.enumerated() {
            if position > 0 {
                code += 1
                code <<= UInt32(lengths[symbol] - length)
                length = lengths[symbol]
            }
            codes[symbol] = code
        }
        precondition(codes[endOfString] == (1 << 30) - 1, "RFC 7541 Appendix B: EOS is thirty one-bits")
        return codes
    }()

    /// The decoder's view of the canonical code, per length: the first code of that length, how many
    /// codes have it, and where its symbols start in `symbolsByCode`.
    struct LengthRow {
        var firstCode: UInt32 = 0
        var count: UInt32 = 0
        var firstSymbol = 0
    }

    static let rows: [LengthRow] = {
        var rows = [LengthRow](repeating: LengthRow(), count: longestCode + 1)
        var position = 0
        for symbol in symbolsByCode {
            let length = Int(lengths[symbol])
            if rows[length].count == 0 {
                rows[length].firstCode = codes[symbol]
                rows[length].firstSymbol = position
            }
            rows[length].count += 1
            position += 1
        }
        return rows
    }()

    /// The symbols in code order (by length, then symbol), as canonical decoding walks them.
    static let symbolsByCode: [Int] = (0...256).sorted { (lengths[$0], $0) < (lengths[$1], $1) }
}
