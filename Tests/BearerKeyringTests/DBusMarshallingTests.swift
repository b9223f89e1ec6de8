import BearerKeyring
import Testing

/// The body `values` encode to.
private func encoded(_ values: [DBusValue]) -> [UInt8] {
    var encoder = DBusEncoder()
    for value in values { encoder.write(value) }
    return encoder.bytes
}

/// `values` decoded from `bytes` against `signature`.
private func decoded(
    _ bytes: [UInt8],
    _ signature: String,
    bigEndian: Bool = false
) throws(DBusDecodeError)
    -> [DBusValue]
{
    var decoder = DBusDecoder(bytes: bytes, bigEndian: bigEndian)
    let values = try decoder.read(try DBusType.parse(signature))
    guard decoder.isAtEnd else { throw .invalidHeader("bytes left") }
    return values
}

@Suite struct DBusMarshallingTests {
    /// What the Secret Service calls carry (a{sv}, (oayays), ao) and every basic type, through the
    /// encoder and back, with the signature the values name.
    @Test func everyTypeRoundTrips() throws {
        let values: [DBusValue] = [
            .byte(0xFE), .boolean(true), .int16(-2), .uint16(65_000), .int32(-70_000), .uint32(4_000_000_000),
            .int64(-(1 << 40)), .uint64(1 << 63), .double(-1.5), .string("grüße"), .objectPath("/org/a_1/b"),
            .signature("a{sv}"), .unixFD(3),
            .array(
                .dictEntry(key: .string, value: .variant),
                [
                    .dictEntry(.string("Label"), .variant(.string("x"))),
                    .dictEntry(.string("Attributes"), .variant(.stringDictionary([("session", "default")]))),
                ]
            ),
            .structure([.objectPath("/s/1"), .bytes([]), .bytes([1, 2, 3]), .string("text/plain")]),
            .objectPaths(["/a", "/b"]), .array(.int64, []), .variant(.variant(.uint16(7))),
        ]
        let signature = values.map(\.type.signature).joined()
        #expect(signature == "ybnqiuxtdsogha{sv}(oayays)aoaxv")
        #expect(try decoded(encoded(values), signature) == values)
    }

    /// The specification's alignment: each value starts on a multiple of its alignment from the
    /// start, padded with zeros; an array's length is followed by padding to its element's alignment,
    /// not counted in the length, even when the array is empty; a struct starts on 8.
    @Test func valuesAreAlignedAsTheSpecificationSays() {
        #expect(encoded([.byte(1), .uint32(2)]) == [1, 0, 0, 0, 2, 0, 0, 0])
        #expect(encoded([.byte(1), .uint16(2)]) == [1, 0, 2, 0])
        #expect(encoded([.byte(1), .int64(2)]) == [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0])
        #expect(encoded([.array(.int64, [])]) == [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(encoded([.array(.int64, [.int64(1)])]) == [8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
        #expect(encoded([.byte(9), .structure([.byte(1)])]) == [9, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(encoded([.string("ab")]) == [2, 0, 0, 0, 0x61, 0x62, 0])
        #expect(encoded([.signature("s")]) == [1, 0x73, 0])
        #expect(encoded([.variant(.byte(5))]) == [1, 0x79, 0, 5])
        #expect(encoded([.boolean(true)]) == [1, 0, 0, 0])
    }

    /// A message through the encoder and back keeps its header fields and body; its length is what
    /// `frameLength` reads from its first 16 bytes.
    @Test func messageRoundTrips() throws {
        var message = DBusMessage.call(
            serial: 7,
            destination: "org.freedesktop.secrets",
            path: "/org/freedesktop/secrets",
            interface: "org.freedesktop.Secret.Service",
            member: "SearchItems",
            body: [.stringDictionary([("application", "bearer-proxy")])]
        )
        message.flags = 0x2
        let bytes = message.encoded()
        #expect(try DBusMessage.frameLength(bytes[..<15]) == nil)
        #expect(try DBusMessage.frameLength(bytes[...]) == bytes.count)
        #expect(try DBusMessage(decoding: bytes) == message)
        var reply = DBusMessage(kind: .error, serial: 3)
        reply.replySerial = 7
        reply.errorName = "org.freedesktop.DBus.Error.ServiceUnknown"
        reply.sender = "org.freedesktop.DBus"
        reply.body = [.string("no such name")]
        #expect(try DBusMessage(decoding: reply.encoded()) == reply)
    }

    /// A big-endian message (the bus forwards each in its sender's byte order) reads the same.
    @Test func bigEndianMessagesAreRead() throws {
        // Hello's reply from a big-endian peer: reply serial 1, body "s" ":1.5".
        var bytes: [UInt8] = [UInt8(ascii: "B"), 2, 0, 1, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 15]
        bytes += [5, 1, UInt8(ascii: "u"), 0, 0, 0, 0, 1]  // REPLY_SERIAL = 1
        bytes += [8, 1, UInt8(ascii: "g"), 0, 1, UInt8(ascii: "s"), 0]  // SIGNATURE = s
        bytes += [0]  // padding to 8
        bytes += [0, 0, 0, 4] + Array(":1.5".utf8) + [0]
        let message = try DBusMessage(decoding: bytes)
        #expect(message.kind == .methodReturn)
        #expect(message.replySerial == 1)
        #expect(message.body == [.string(":1.5")])
    }

    struct Malformed: CustomStringConvertible, Sendable {
        var description: String
        var bytes: [UInt8]
        var signature: String
        var error: DBusDecodeError
    }

    /// Bytes that break a rule are a typed error naming the rule, never a crash or a wrong value.
    @Test(arguments: [
        Malformed(description: "boolean 2", bytes: [2, 0, 0, 0], signature: "b", error: .invalidBoolean(2)),
        Malformed(
            description: "non-zero padding",
            bytes: [1, 9, 0, 0, 2, 0, 0, 0],
            signature: "yu",
            error: .paddingNotZero
        ),
        Malformed(
            description: "string without its NUL",
            bytes: [1, 0, 0, 0, 0x61, 0x62],
            signature: "s",
            error: .invalidString
        ),
        Malformed(
            description: "NUL inside a string",
            bytes: [2, 0, 0, 0, 0x61, 0, 0],
            signature: "s",
            error: .invalidString
        ),
        Malformed(description: "invalid UTF-8", bytes: [1, 0, 0, 0, 0xFF, 0], signature: "s", error: .invalidString),
        Malformed(description: "truncated integer", bytes: [1, 0], signature: "u", error: .truncated),
        Malformed(
            description: "array longer than the bytes",
            bytes: [8, 0, 0, 0, 1],
            signature: "ay",
            error: .truncated
        ),
        Malformed(
            description: "array length inside an element",
            bytes: [3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0],
            signature: "au",
            error: .arrayLengthMismatch
        ),
        Malformed(
            description: "array over 64 MiB",
            bytes: [0, 0, 0, 0x08],
            signature: "ay",
            error: .arrayTooLong(1 << 27)
        ),
        Malformed(
            description: "object path with a trailing slash",
            bytes: [3, 0, 0, 0, 0x2F, 0x61, 0x2F, 0],
            signature: "o",
            error: .invalidObjectPath
        ),
        Malformed(
            description: "variant of two types",
            bytes: [2, 0x79, 0x79, 0, 1, 2],
            signature: "v",
            error: .invalidSignature("a variant holds 2 types")
        ),
    ])
    func malformedInputIsATypedError(_ input: Malformed) {
        #expect(throws: input.error) { try decoded(input.bytes, input.signature) }
    }

    /// Signatures the specification forbids are refused before any value is read.
    @Test(arguments: ["a{vs}", "a{s}", "a{sss}", "()", "(s", "a", "z", String(repeating: "a", count: 33) + "y"])
    func invalidSignaturesAreRefused(_ signature: String) {
        #expect(throws: DBusDecodeError.self) { try DBusType.parse(signature) }
    }

    /// A message whose header announces more than 128 MiB is refused from its first 16 bytes, before
    /// anything waits for the rest; an unknown endianness byte too.
    @Test func framingRefusesWhatCannotBeAMessage() {
        let huge: [UInt8] = [UInt8(ascii: "l"), 1, 0, 1, 0, 0, 0, 0x10, 1, 0, 0, 0, 0, 0, 0, 0]
        #expect(throws: DBusDecodeError.messageTooLong(1 << 28)) { try DBusMessage.frameLength(huge[...]) }
        var wrong = huge
        wrong[0] = UInt8(ascii: "x")
        #expect(throws: DBusDecodeError.invalidEndianness(UInt8(ascii: "x"))) {
            try DBusMessage.frameLength(wrong[...])
        }
    }

    /// A reply without the fields its kind needs is refused (a method return must name the call it answers).
    @Test func messagesMissingRequiredFieldsAreRefused() {
        let reply = DBusMessage(kind: .methodReturn, serial: 4)
        #expect(throws: DBusDecodeError.invalidHeader("a method return without reply serial")) {
            try DBusMessage(decoding: reply.encoded())
        }
    }
}
