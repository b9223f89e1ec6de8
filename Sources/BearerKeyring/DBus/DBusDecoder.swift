/// Reads D-Bus values of a known type from a message's bytes, checking what the specification
/// requires: zero padding, booleans 0 or 1, strings UTF-8 with one NUL and none inside, valid object
/// paths, array lengths within 64 MiB that end exactly where the elements do.
///
/// Either byte order: the bus forwards each message in its sender's.
package struct DBusDecoder: Sendable {
    private let bytes: [UInt8]
    private let bigEndian: Bool
    /// Where alignment counts from: the message's start for the header, the body's for the body.
    private let origin: Int
    package private(set) var offset: Int

    /// Values nested deeper than this (arrays, structs and variants together) are refused.
    static let maximumDepth = 64

    package init(bytes: [UInt8], bigEndian: Bool = false, offset: Int = 0, origin: Int = 0) {
        self.bytes = bytes
        self.bigEndian = bigEndian
        self.offset = offset
        self.origin = origin
    }

    package var isAtEnd: Bool { self.offset >= self.bytes.count }

    /// The values of `types` in order (a body against its signature).
    package mutating func read(_ types: [DBusType]) throws(DBusDecodeError) -> [DBusValue] {
        var values: [DBusValue] = []
        for type in types { values.append(try self.read(type)) }
        return values
    }

    package mutating func read(_ type: DBusType) throws(DBusDecodeError) -> DBusValue {
        try self.read(type, depth: 0)
    }

    package mutating func skipPadding(to alignment: Int) throws(DBusDecodeError) {
        let misalignment = (self.offset - self.origin) % alignment
        guard misalignment != 0 else { return }
        let end = self.offset + alignment - misalignment
        guard end <= self.bytes.count else { throw .truncated }
        guard self.bytes[self.offset..<end].allSatisfy({ $0 == 0 }) else { throw .paddingNotZero }
        self.offset = end
    }

    private mutating func read(_ type: DBusType, depth: Int) throws(DBusDecodeError) -> DBusValue {
        guard depth <= Self.maximumDepth else { throw .nestedTooDeeply }
        try self.skipPadding(to: type.alignment)
        switch type {
        case .byte: return .byte(try self.integer(UInt8.self))
        case .boolean:
            let raw = try self.integer(UInt32.self)
            guard raw <= 1 else { throw .invalidBoolean(raw) }
            return .boolean(raw == 1)
        case .int16: return .int16(Int16(bitPattern: try self.integer(UInt16.self)))
        case .uint16: return .uint16(try self.integer(UInt16.self))
        case .int32: return .int32(Int32(bitPattern: try self.integer(UInt32.self)))
        case .uint32: return .uint32(try self.integer(UInt32.self))
        case .unixFD: return .unixFD(try self.integer(UInt32.self))
        case .int64: return .int64(Int64(bitPattern: try self.integer(UInt64.self)))
        case .uint64: return .uint64(try self.integer(UInt64.self))
        case .double: return .double(Double(bitPattern: try self.integer(UInt64.self)))
        case .string: return .string(try self.text(length: Int(try self.integer(UInt32.self))))
        case .objectPath:
            let path = try self.text(length: Int(try self.integer(UInt32.self)))
            guard Self.isValidObjectPath(path) else { throw .invalidObjectPath }
            return .objectPath(path)
        case .signature:
            let signature = try self.text(length: Int(try self.integer(UInt8.self)))
            _ = try DBusType.parse(signature)
            return .signature(signature)
        case .variant:
            let signature = try self.text(length: Int(try self.integer(UInt8.self)))
            let inner = try DBusType.parseSingle(signature)
            return .variant(try self.read(inner, depth: depth + 1))
        case .array(let element):
            let length = try self.integer(UInt32.self)
            guard length <= 1 << 26 else { throw .arrayTooLong(length) }
            try self.skipPadding(to: element.alignment)
            let end = self.offset + Int(length)
            guard end <= self.bytes.count else { throw .truncated }
            var elements: [DBusValue] = []
            while self.offset < end { elements.append(try self.read(element, depth: depth + 1)) }
            guard self.offset == end else { throw .arrayLengthMismatch }
            return .array(element, elements)
        case .dictEntry(let key, let value):
            return .dictEntry(try self.read(key, depth: depth + 1), try self.read(value, depth: depth + 1))
        case .structure(let fields):
            var values: [DBusValue] = []
            for field in fields { values.append(try self.read(field, depth: depth + 1)) }
            return .structure(values)
        }
    }

    private mutating func integer<Integer: FixedWidthInteger>(_: Integer.Type) throws(DBusDecodeError) -> Integer {
        let size = MemoryLayout<Integer>.size
        guard self.offset + size <= self.bytes.count else { throw .truncated }
        var value: Integer = 0
        for index in 0..<size {
            value |= Integer(self.bytes[self.offset + index]) << (8 * index)
        }
        self.offset += size
        return self.bigEndian ? value.byteSwapped : value
    }

    /// `length` bytes of UTF-8 and the NUL after them.
    private mutating func text(length: Int) throws(DBusDecodeError) -> String {
        let end = self.offset + length
        guard end < self.bytes.count else { throw .truncated }
        let utf8 = self.bytes[self.offset..<end]
        guard self.bytes[end] == 0, !utf8.contains(0), let text = String(validating: utf8, as: UTF8.self) else {
            throw .invalidString
        }
        self.offset = end + 1
        return text
    }

    /// `/`, or `/` followed by elements of `[A-Za-z0-9_]`, separated by single slashes, no slash at the end.
    package static func isValidObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        return bytes.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).allSatisfy {
            element in
            !element.isEmpty
                && element.allSatisfy { byte in
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
                }
        }
    }
}
