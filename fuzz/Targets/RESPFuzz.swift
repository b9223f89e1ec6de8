import BearerSession

/// Replies from Redis: the parser fed the input whole and in pieces reads the same values and stops
/// at the same error (it keeps finished elements of a half-arrived array, the part most easily
/// read twice or not at all).
enum RESPFuzz {
    static func run(_ input: [UInt8]) {
        precondition(
            self.values([input]) == self.values(pieces(of: input)),
            "the RESP parser read the input differently whole and in pieces"
        )
    }

    static func values(_ pieces: [[UInt8]]) -> Transcript<RESPParseError> {
        var limits = RESPParser.Limits()
        limits.maximumBulkBytes = 1 << 16
        limits.maximumArrayCount = 1 << 12
        var parser = RESPParser(limits: limits)
        return transcript(of: pieces, next: { (bytes) throws(RESPParseError) in try parser.next(bytes) }) {
            event,
            _,
            transcript in
            guard case .value(let value, _) = event else { return false }
            transcript.append(.value("\(value)"))
            return true
        }
    }
}
