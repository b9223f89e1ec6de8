/// One D-Bus message: the fixed header, the header fields, the body (D-Bus specification, "Message
/// Format").
///
/// Written little-endian; read in either byte order. `frameLength` tells a reader how many bytes a
/// message takes from its first 16, so a connection reads whole messages before decoding one.
package struct DBusMessage: Equatable, Sendable {
    package enum Kind: UInt8, Sendable {
        case methodCall = 1
        case methodReturn = 2
        case error = 3
        case signal = 4
    }

    /// The header fields' codes.
    enum Field: UInt8 {
        case path = 1, interface, member, errorName, replySerial, destination, sender, signature, unixFDs
    }

    package var kind: Kind
    /// NO_REPLY_EXPECTED (0x1), NO_AUTO_START (0x2), ALLOW_INTERACTIVE_AUTHORIZATION (0x4).
    package var flags: UInt8 = 0
    package var serial: UInt32
    package var path: String?
    package var interface: String?
    package var member: String?
    package var errorName: String?
    package var replySerial: UInt32?
    package var destination: String?
    package var sender: String?
    package var body: [DBusValue] = []

    /// The largest message the specification allows (128 MiB).
    static let maximumLength = 1 << 27

    package init(kind: Kind, serial: UInt32) {
        self.kind = kind
        self.serial = serial
    }

    /// A method call to `member` of `interface` on `path` at `destination`.
    package static func call(
        serial: UInt32,
        destination: String,
        path: String,
        interface: String,
        member: String,
        body: [DBusValue] = []
    ) -> DBusMessage {
        var message = DBusMessage(kind: .methodCall, serial: serial)
        message.destination = destination
        message.path = path
        message.interface = interface
        message.member = member
        message.body = body
        return message
    }

    /// The body's signature: its values' types, concatenated.
    package var signature: String { self.body.map(\.type.signature).joined() }

    // MARK: Writing

    package func encoded() -> [UInt8] {
        var bodyEncoder = DBusEncoder()
        for value in self.body { bodyEncoder.write(value) }
        var fields: [DBusValue] = []
        func add(_ field: Field, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(field.rawValue), .variant(value)])) }
        }
        add(.path, self.path.map { .objectPath($0) })
        add(.interface, self.interface.map { .string($0) })
        add(.member, self.member.map { .string($0) })
        add(.errorName, self.errorName.map { .string($0) })
        add(.replySerial, self.replySerial.map { .uint32($0) })
        add(.destination, self.destination.map { .string($0) })
        add(.sender, self.sender.map { .string($0) })
        add(.signature, self.body.isEmpty ? nil : .signature(self.signature))
        var encoder = DBusEncoder()
        encoder.write(.byte(UInt8(ascii: "l")))
        encoder.write(.byte(self.kind.rawValue))
        encoder.write(.byte(self.flags))
        encoder.write(.byte(1))
        encoder.write(.uint32(UInt32(bodyEncoder.bytes.count)))
        encoder.write(.uint32(self.serial))
        encoder.write(.array(.structure([.byte, .variant]), fields))
        encoder.pad(to: 8)
        return encoder.bytes + bodyEncoder.bytes
    }

    // MARK: Reading

    /// How many bytes the message starting with `prefix` takes in all, once 16 of its bytes are there
    /// (nil before); an error when the prefix cannot start a message or announces one too long.
    package static func frameLength(_ prefix: ArraySlice<UInt8>) throws(DBusDecodeError) -> Int? {
        guard prefix.count >= 16 else { return nil }
        let start = prefix.startIndex
        let bigEndian = try Self.isBigEndian(prefix[start])
        func uint32(at offset: Int) -> Int {
            let raw = (0..<4).reduce(UInt32(0)) { $0 | UInt32(prefix[start + offset + $1]) << (8 * $1) }
            return Int(bigEndian ? raw.byteSwapped : raw)
        }
        let bodyLength = uint32(at: 4)
        let fieldsLength = uint32(at: 12)
        guard bodyLength <= Self.maximumLength, fieldsLength <= Self.maximumLength else {
            throw .messageTooLong(max(bodyLength, fieldsLength))
        }
        let headerLength = (16 + fieldsLength + 7) & ~7
        let total = headerLength + bodyLength
        guard total <= Self.maximumLength else { throw .messageTooLong(total) }
        return total
    }

    private static func isBigEndian(_ byte: UInt8) throws(DBusDecodeError) -> Bool {
        switch byte {
        case UInt8(ascii: "l"): false
        case UInt8(ascii: "B"): true
        default: throw .invalidEndianness(byte)
        }
    }

    /// The message in `bytes`, which hold exactly one (`frameLength` of them).
    package init(decoding bytes: [UInt8]) throws(DBusDecodeError) {
        guard let total = try Self.frameLength(bytes[...]) else { throw .truncated }
        guard total == bytes.count else { throw .invalidHeader("the lengths do not add up to the message") }
        let bigEndian = try Self.isBigEndian(bytes[0])
        var header = DBusDecoder(bytes: bytes, bigEndian: bigEndian, offset: 1)
        guard case .byte(let kindCode) = try header.read(.byte), case .byte(let flags) = try header.read(.byte),
            case .byte(let version) = try header.read(.byte), case .uint32(let bodyLength) = try header.read(.uint32),
            case .uint32(let serial) = try header.read(.uint32)
        else { preconditionFailure("the decoder returned another type than asked") }
        guard let kind = Kind(rawValue: kindCode) else { throw .invalidMessageType(kindCode) }
        guard version == 1 else { throw .unsupportedVersion(version) }
        guard serial != 0 else { throw .invalidHeader("serial 0") }
        self.init(kind: kind, serial: serial)
        self.flags = flags
        var signature = ""
        let fields = try header.read(.array(.structure([.byte, .variant]))).elements ?? []
        for field in fields {
            guard case .structure(let pair) = field, case .byte(let code) = pair[0], case .variant(let value) = pair[1]
            else { continue }
            // Unknown fields are ignored, as the specification asks; known ones must have their type.
            guard let known = Field(rawValue: code) else { continue }
            guard value.type == Self.type(of: known) else {
                throw .invalidHeader("header field \(code) has type \(value.type.signature)")
            }
            switch known {
            case .path: self.path = value.stringValue
            case .interface: self.interface = value.stringValue
            case .member: self.member = value.stringValue
            case .errorName: self.errorName = value.stringValue
            case .replySerial: self.replySerial = value.uint32Value
            case .destination: self.destination = value.stringValue
            case .sender: self.sender = value.stringValue
            case .signature: signature = value.stringValue ?? ""
            case .unixFDs: break
            }
        }
        try self.requireFields()
        try header.skipPadding(to: 8)
        guard header.offset + Int(bodyLength) == bytes.count else { throw .invalidHeader("body length") }
        var body = DBusDecoder(bytes: bytes, bigEndian: bigEndian, offset: header.offset, origin: header.offset)
        self.body = try body.read(try DBusType.parse(signature))
        guard body.isAtEnd else { throw .invalidHeader("the body is longer than its signature") }
    }

    private static func type(of field: Field) -> DBusType {
        switch field {
        case .path: .objectPath
        case .interface, .member, .errorName, .destination, .sender: .string
        case .replySerial, .unixFDs: .uint32
        case .signature: .signature
        }
    }

    /// The fields each kind of message must carry.
    private func requireFields() throws(DBusDecodeError) {
        switch self.kind {
        case .methodCall:
            guard self.path != nil, self.member != nil else {
                throw .invalidHeader("a method call without path or member")
            }
        case .methodReturn:
            guard self.replySerial != nil else { throw .invalidHeader("a method return without reply serial") }
        case .error:
            guard self.replySerial != nil, self.errorName != nil else {
                throw .invalidHeader("an error without reply serial or error name")
            }
        case .signal:
            guard self.path != nil, self.interface != nil, self.member != nil else {
                throw .invalidHeader("a signal without path, interface or member")
            }
        }
    }
}
