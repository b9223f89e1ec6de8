/// Writes D-Bus values little-endian, padding each to its alignment (D-Bus specification,
/// "Marshaling (Wire Format)").
///
/// Alignment counts from the start of what is being written: the header from the message's first
/// byte, the body from its own (the header ends on an 8-byte boundary, so the two agree).
package struct DBusEncoder: Sendable {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func pad(to alignment: Int) {
        while self.bytes.count % alignment != 0 { self.bytes.append(0) }
    }

    package mutating func write(_ value: DBusValue) {
        self.pad(to: value.type.alignment)
        switch value {
        case .byte(let byte): self.bytes.append(byte)
        case .boolean(let flag): self.appendInteger(UInt32(flag ? 1 : 0))
        case .int16(let number): self.appendInteger(UInt16(bitPattern: number))
        case .uint16(let number): self.appendInteger(number)
        case .int32(let number): self.appendInteger(UInt32(bitPattern: number))
        case .uint32(let number), .unixFD(let number): self.appendInteger(number)
        case .int64(let number): self.appendInteger(UInt64(bitPattern: number))
        case .uint64(let number): self.appendInteger(number)
        case .double(let number): self.appendInteger(number.bitPattern)
        case .string(let text), .objectPath(let text):
            let utf8 = Array(text.utf8)
            self.appendInteger(UInt32(utf8.count))
            self.bytes += utf8
            self.bytes.append(0)
        case .signature(let text):
            self.writeSignature(text)
        case .variant(let inner):
            self.writeSignature(inner.type.signature)
            self.write(inner)
        case .array(let element, let elements):
            let lengthAt = self.bytes.count
            self.appendInteger(UInt32(0))
            // The padding to the first element is not part of the length, even for an empty array.
            self.pad(to: element.alignment)
            let start = self.bytes.count
            for item in elements { self.write(item) }
            let length = UInt32(self.bytes.count - start)
            for index in 0..<4 { self.bytes[lengthAt + index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
        case .dictEntry(let key, let value):
            self.write(key)
            self.write(value)
        case .structure(let fields):
            for field in fields { self.write(field) }
        }
    }

    private mutating func writeSignature(_ text: String) {
        let utf8 = Array(text.utf8)
        self.bytes.append(UInt8(utf8.count))
        self.bytes += utf8
        self.bytes.append(0)
    }

    private mutating func appendInteger<Integer: FixedWidthInteger>(_ value: Integer) {
        withUnsafeBytes(of: value.littleEndian) { self.bytes += $0 }
    }
}
