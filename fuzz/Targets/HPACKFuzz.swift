import BearerHTTP2

/// HPACK header blocks from a peer: decoded within the bounds (the list and the dynamic table never
/// past them), and whatever decodes, encoded again and decoded by a fresh decoder to the same list.
enum HPACKFuzz {
    static let maxHeaderListSize = 16_384

    static func run(_ input: [UInt8]) {
        var decoder = HPACKDecoder(maxHeaderListSize: Self.maxHeaderListSize)
        // Two blocks on one decoder, cut where the first byte says: the dynamic table carries over.
        let cut = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        for block in [Array(input[..<cut]), Array(input[cut...])] {
            guard let list = try? decoder.decode(block) else { return }
            precondition(list.size <= Self.maxHeaderListSize, "a decoded list went past its bound")
            precondition(decoder.tableSize <= decoder.maxTableSize, "the dynamic table went past its size")
            var encoder = HPACKEncoder()
            var encoded: [UInt8] = []
            encoder.encode(list, into: &encoded)
            var fresh = HPACKDecoder(maxHeaderListSize: Self.maxHeaderListSize)
            let again = try? fresh.decode(encoded)
            precondition(
                again.map { self.pairs($0) } == self.pairs(list),
                "what the encoder wrote decoded to another list"
            )
        }
    }

    static func pairs(_ list: HeaderList) -> [[UInt8]] {
        list.fields.flatMap { [Array(list.bytes[$0.name]), Array(list.bytes[$0.value])] }
    }
}
