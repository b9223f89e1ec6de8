/// A D-Bus type, as a signature spells it (D-Bus specification, "Type System").
///
/// Parsing a signature checks what the specification requires of it, so that neither the encoder
/// nor the decoder meets a type it cannot lay out: dict entries only as array elements with a basic
/// key, no empty structs, at most 32 nested arrays and 32 nested structs, 255 bytes in all.
package indirect enum DBusType: Equatable, Sendable {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    case dictEntry(key: DBusType, value: DBusType)
    case structure([DBusType])

    /// The boundary a value of this type starts on, from the start of the message.
    package var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .string, .objectPath, .unixFD, .array: 4
        case .int64, .uint64, .double, .structure, .dictEntry: 8
        }
    }

    /// Whether it may be a dict entry's key: the fixed types and the string-like ones.
    package var isBasic: Bool {
        switch self {
        case .variant, .array, .dictEntry, .structure: false
        default: true
        }
    }

    /// This type's signature: `a{sv}`, `(oayays)`.
    package var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// The complete types a signature lists, in order (a message body's signature lists several).
    package static func parse(_ signature: String) throws(DBusDecodeError) -> [DBusType] {
        let bytes = Array(signature.utf8)
        guard bytes.count <= 255 else { throw .invalidSignature("longer than 255 bytes") }
        var reader = SignatureReader(bytes: bytes)
        var types: [DBusType] = []
        while reader.offset < bytes.count {
            types.append(try reader.completeType(arrays: 0, structs: 0))
        }
        return types
    }

    /// Exactly one complete type (a variant's signature).
    package static func parseSingle(_ signature: String) throws(DBusDecodeError) -> DBusType {
        let types = try Self.parse(signature)
        guard types.count == 1 else { throw .invalidSignature("a variant holds \(types.count) types") }
        return types[0]
    }
}

/// Reads one complete type at a time from a signature's bytes, counting nesting.
private struct SignatureReader {
    let bytes: [UInt8]
    var offset = 0

    static let maximumDepth = 32

    mutating func completeType(arrays: Int, structs: Int) throws(DBusDecodeError) -> DBusType {
        guard self.offset < self.bytes.count else { throw .invalidSignature("ends inside a type") }
        let code = self.bytes[self.offset]
        self.offset += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrays < Self.maximumDepth else { throw .invalidSignature("arrays nested deeper than 32") }
            if self.offset < self.bytes.count, self.bytes[self.offset] == UInt8(ascii: "{") {
                self.offset += 1
                let key = try self.completeType(arrays: arrays + 1, structs: structs)
                guard key.isBasic else { throw .invalidSignature("a dict entry's key is not a basic type") }
                let value = try self.completeType(arrays: arrays + 1, structs: structs)
                guard self.offset < self.bytes.count, self.bytes[self.offset] == UInt8(ascii: "}") else {
                    throw .invalidSignature("a dict entry has other than two types")
                }
                self.offset += 1
                return .array(.dictEntry(key: key, value: value))
            }
            return .array(try self.completeType(arrays: arrays + 1, structs: structs))
        case UInt8(ascii: "("):
            guard structs < Self.maximumDepth else { throw .invalidSignature("structs nested deeper than 32") }
            var fields: [DBusType] = []
            while self.offset < self.bytes.count, self.bytes[self.offset] != UInt8(ascii: ")") {
                fields.append(try self.completeType(arrays: arrays, structs: structs + 1))
            }
            guard self.offset < self.bytes.count else { throw .invalidSignature("a struct is not closed") }
            guard !fields.isEmpty else { throw .invalidSignature("an empty struct") }
            self.offset += 1
            return .structure(fields)
        default:
            throw .invalidSignature("unknown type code 0x\(String(code, radix: 16))")
        }
    }
}
