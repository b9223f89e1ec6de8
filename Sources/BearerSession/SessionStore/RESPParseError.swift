/// Why bytes from Redis are not RESP2: the connection cannot be trusted any more and is closed.
package enum RESPParseError: Error, Equatable, Sendable {
    case unknownType(UInt8)
    case invalidLength
    case invalidInteger
    case missingCRLF
    case lineTooLong
    case bulkStringTooLarge
    case arrayTooLarge
    case nestedTooDeeply

    /// One line for a log: never contains bytes from the stream (they may be a token).
    package var message: String {
        switch self {
        case .unknownType(let byte): "unknown RESP type byte 0x\(String(byte, radix: 16))"
        case .invalidLength: "invalid bulk string or array length"
        case .invalidInteger: "invalid integer"
        case .missingCRLF: "a line did not end with CRLF"
        case .lineTooLong: "a line is longer than the limit"
        case .bulkStringTooLarge: "a bulk string is larger than the limit"
        case .arrayTooLarge: "an array has more elements than the limit"
        case .nestedTooDeeply: "arrays are nested too deeply"
        }
    }
}
