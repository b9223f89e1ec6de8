/// Why bytes from the bus are not a D-Bus message: the connection cannot be trusted any more.
///
/// The description never quotes the bytes (a reply may carry a secret).
package enum DBusDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidSignature(String)
    /// The value ends past the bytes there are.
    case truncated
    case invalidBoolean(UInt32)
    case invalidString
    case invalidObjectPath
    case paddingNotZero
    case arrayTooLong(UInt32)
    /// An array's elements did not end exactly at its length.
    case arrayLengthMismatch
    case nestedTooDeeply
    case invalidEndianness(UInt8)
    case unsupportedVersion(UInt8)
    case invalidMessageType(UInt8)
    case messageTooLong(Int)
    case invalidHeader(String)

    package var description: String {
        switch self {
        case .invalidSignature(let why): "invalid D-Bus signature: \(why)"
        case .truncated: "a D-Bus value ends past the message"
        case .invalidBoolean(let value): "a D-Bus boolean is \(value), not 0 or 1"
        case .invalidString: "a D-Bus string is not UTF-8 ended by one NUL"
        case .invalidObjectPath: "invalid D-Bus object path"
        case .paddingNotZero: "D-Bus alignment padding is not zero"
        case .arrayTooLong(let length): "a D-Bus array is \(length) bytes, more than 64 MiB"
        case .arrayLengthMismatch: "a D-Bus array's elements do not end at its length"
        case .nestedTooDeeply: "D-Bus values nested deeper than 64"
        case .invalidEndianness(let byte): "unknown D-Bus endianness byte 0x\(String(byte, radix: 16))"
        case .unsupportedVersion(let version): "unsupported D-Bus protocol version \(version)"
        case .invalidMessageType(let type): "unknown D-Bus message type \(type)"
        case .messageTooLong(let length): "a D-Bus message of \(length) bytes, more than 128 MiB"
        case .invalidHeader(let why): "invalid D-Bus message header: \(why)"
        }
    }
}
