/// A D-Bus value, carrying its type: what the encoder writes and the decoder returns.
///
/// An array keeps its element type, so that an empty one still has a signature (`as` with no
/// strings is not `ao` with no paths). A dict is an array of dict entries, as on the wire.
package indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case unixFD(UInt32)
    case variant(DBusValue)
    case array(DBusType, [DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case structure([DBusValue])

    /// The value's type (for an array, the element type it was made with).
    package var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .variant: .variant
        case .array(let element, _): .array(element)
        case .dictEntry(let key, let value): .dictEntry(key: key.type, value: value.type)
        case .structure(let fields): .structure(fields.map(\.type))
        }
    }

    /// `ay`: bytes, as a secret's value travels.
    package static func bytes(_ bytes: [UInt8]) -> DBusValue {
        .array(.byte, bytes.map { .byte($0) })
    }

    /// `a{ss}`: attributes, as the Secret Service matches items by.
    package static func stringDictionary(_ pairs: [(String, String)]) -> DBusValue {
        .array(.dictEntry(key: .string, value: .string), pairs.map { .dictEntry(.string($0.0), .string($0.1)) })
    }

    /// `ao`: object paths.
    package static func objectPaths(_ paths: [String]) -> DBusValue {
        .array(.objectPath, paths.map { .objectPath($0) })
    }

    // MARK: Reading a decoded value

    package var stringValue: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .variant(let inner): inner.stringValue
        default: nil
        }
    }

    package var uint32Value: UInt32? {
        if case .uint32(let value) = self { return value }
        return nil
    }

    package var elements: [DBusValue]? {
        switch self {
        case .array(_, let elements), .structure(let elements): elements
        default: nil
        }
    }

    /// An `ay`'s bytes.
    package var byteValues: [UInt8]? {
        guard case .array(.byte, let elements) = self else { return nil }
        return elements.map { if case .byte(let byte) = $0 { byte } else { 0 } }
    }

    /// An `ao`'s paths.
    package var objectPathValues: [String]? {
        guard case .array(.objectPath, let elements) = self else { return nil }
        return elements.compactMap(\.stringValue)
    }
}
