/// The input cut into pieces of 1…16 bytes whose sizes come from the input's own bytes, so that the
/// fuzzer steers the cuts as it steers the content.
func pieces(of input: [UInt8]) -> [[UInt8]] {
    guard !input.isEmpty else { return [] }
    var pieces: [[UInt8]] = []
    var index = 0
    var seed = 0
    while index < input.count {
        let size = 1 + Int(input[seed % input.count] & 0x0F)
        seed += 1
        let end = min(input.count, index + size)
        pieces.append(Array(input[index..<end]))
        index = end
    }
    return pieces
}

/// The input as text, with bytes that are not UTF-8 replaced (what a reader of a file would see).
func text(_ input: [UInt8]) -> String {
    String(decoding: input, as: UTF8.self)
}
