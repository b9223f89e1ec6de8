/// One RESP2 value, as Redis sends it.
///
/// RESP2 only: the proxy never sends `HELLO 3`, so Redis answers every command in RESP2, and pub/sub
/// messages arrive as arrays on the subscribing connection (Redis serialization protocol
/// specification, "RESP protocol description").
package enum RESPValue: Equatable, Sendable {
    /// `+OK\r\n`
    case simpleString(String)
    /// `-ERR unknown command\r\n`: the command failed; the connection is fine.
    case error(String)
    /// `:1000\r\n`
    case integer(Int64)
    /// `$5\r\nhello\r\n`; nil is the null bulk string `$-1\r\n` (GET of a missing key).
    case bulkString([UInt8]?)
    /// `*2\r\n…`; nil is the null array `*-1\r\n`.
    case array([RESPValue]?)

    /// The text of a simple or bulk string, or an integer's digits; nil for anything else.
    package var text: String? {
        switch self {
        case .simpleString(let text): text
        case .bulkString(let bytes?): String(decoding: bytes, as: UTF8.self)
        case .integer(let value): String(value)
        case .error, .bulkString(nil), .array: nil
        }
    }

    /// An integer reply, or a string holding one (Lua scripts answer numbers as either).
    package var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .simpleString, .bulkString: self.text.flatMap { Int64($0) }
        case .error, .array: nil
        }
    }

    /// True for the null bulk string and the null array.
    package var isNull: Bool {
        self == .bulkString(nil) || self == .array(nil)
    }
}
