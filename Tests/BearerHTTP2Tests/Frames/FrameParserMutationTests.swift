import BearerTestSupport
import Testing

@testable import BearerHTTP2

/// Seeded mutations of lawful bytes through the frame parser and the HPACK decoder: no crash, the
/// same outcome whole and split (a parser whose result depends on how bytes arrive could be read
/// differently by two peers), and a decoded list never past its bound. Not a substitute for a
/// libFuzzer target, which needs this module built apart from the SwiftPM build (a next step).
@Suite struct FrameParserMutationTests {
    enum Outcome: Equatable {
        case frames([ParsedFrame])
        /// The frames before the error are not compared: the harness does not return them.
        case failed(HTTP2ConnectionError)
    }

    static func outcome(_ pieces: [[UInt8]]) -> Outcome {
        var parser = HTTP2FrameParser(role: .server, maxHeaderBlockBytes: 4_096)
        do {
            return .frames(try parseFrames(pieces, parser: &parser))
        } catch {
            return .failed(error)
        }
    }

    static func mutated(_ input: [UInt8], _ random: inout SplitMix) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.remove(at: position)
            default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
            }
        }
        return bytes
    }

    @Test(arguments: 1...300 as ClosedRange<UInt64>)
    func mutatedConversationsParseTheSameWholeAndSplit(seed: UInt64) {
        var random = SplitMix(state: seed)
        let input = Self.mutated(HTTP2.clientPreface + FrameParserTests.conversation, &random)
        let whole = Self.outcome([input])
        let split = Int.random(in: 0...input.count, using: &random)
        #expect(Self.outcome([Array(input[..<split]), Array(input[split...])]) == whole, "seed \(seed)")
    }

    @Test(arguments: 1...300 as ClosedRange<UInt64>)
    func mutatedHeaderBlocksDecodeWithinTheBound(seed: UInt64) {
        var random = SplitMix(state: seed)
        var encoder = HPACKEncoder()
        var block: [UInt8] = []
        encoder.encode(
            HeaderList(HeaderValidationTests.get + [("cookie", String(repeating: "c", count: 300))]),
            into: &block
        )
        var decoder = HPACKDecoder(maxHeaderListSize: 600)
        let mutated = Self.mutated(block, &random)
        if let list = try? decoder.decode(mutated) {
            #expect(list.size <= 600, "seed \(seed)")
        }
        #expect(decoder.tableSize <= 4_096)
    }
}
