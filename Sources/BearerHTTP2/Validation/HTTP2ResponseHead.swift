/// A response's header list that passed RFC 9113 §8.2 and §8.3.2: one `:status` of three digits,
/// then regular fields.
package struct HTTP2ResponseHead: Equatable, Sendable {
    package var list: HeaderList
    package var status: Int
    package var contentLength: Int?
    package var firstRegularField: Int

    package init(validating list: HeaderList) throws(HeaderValidationError) {
        self.list = list
        var status: Int?
        let (firstRegular, semantics) = try list.bytes.withUnsafeBytesTypedThrows {
            (bytes) throws(HeaderValidationError) -> (Int, FieldRules.Semantics) in
            let count = FieldRules.pseudoHeaderCount(bytes, list.fields)
            for field in list.fields[..<count] {
                switch PseudoHeader(bytes, field.name) {
                case .status:
                    if status != nil { throw .duplicatePseudoHeader(":status") }
                    let digits = field.value
                    guard digits.count == 3, digits.allSatisfy({ bytes[$0].isDigit }) else { throw .invalidStatus }
                    let value = digits.reduce(0) { $0 * 10 + Int(bytes[$1] - 0x30) }
                    guard (100...599).contains(value) else { throw .invalidStatus }
                    status = value
                case .method: throw .pseudoHeaderNotAllowed(":method")
                case .scheme: throw .pseudoHeaderNotAllowed(":scheme")
                case .authority: throw .pseudoHeaderNotAllowed(":authority")
                case .path: throw .pseudoHeaderNotAllowed(":path")
                case nil: throw .unknownPseudoHeader
                }
            }
            return (count, try FieldRules.checkRegularFields(bytes, list.fields[count...]))
        }
        guard let status else { throw .missingPseudoHeader(":status") }
        self.status = status
        self.contentLength = semantics.contentLength
        self.firstRegularField = firstRegular
    }
}
