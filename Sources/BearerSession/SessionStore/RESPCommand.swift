import BearerCore

/// One command for Redis, sent as a RESP2 array of bulk strings.
///
/// Arguments may be secrets (an AUTH password, a token being stored), so the command prints as its
/// name alone: logging a command, or an error that carries one, can never leak an argument.
package struct RESPCommand: Equatable, Sendable {
    /// The command's name (`SET`, `EVAL`), for logs and errors.
    package let name: String
    private let arguments: [[UInt8]]

    package init(_ name: String, _ arguments: [String] = []) {
        self.name = name
        self.arguments = arguments.map { Array($0.utf8) }
    }

    package init(_ name: String, _ arguments: String...) {
        self.init(name, arguments)
    }

    /// `*N\r\n` then `$len\r\nbytes\r\n` for the name and each argument.
    package func encode(into buffer: inout ByteBuffer) {
        buffer.writeByte(UInt8(ascii: "*"))
        buffer.writeDecimal(self.arguments.count + 1)
        buffer.writeStaticString("\r\n")
        Self.encodeBulk(Array(self.name.utf8), into: &buffer)
        for argument in self.arguments { Self.encodeBulk(argument, into: &buffer) }
    }

    private static func encodeBulk(_ bytes: [UInt8], into buffer: inout ByteBuffer) {
        buffer.writeByte(UInt8(ascii: "$"))
        buffer.writeDecimal(bytes.count)
        buffer.writeStaticString("\r\n")
        buffer.writeBytes(bytes)
        buffer.writeStaticString("\r\n")
    }

    /// The wire bytes (tests; the connection encodes straight into its outbound buffer).
    package var bytes: [UInt8] {
        var buffer = ByteBuffer()
        self.encode(into: &buffer)
        return buffer.readableBytesArray
    }
}

extension RESPCommand: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String { self.name }
    package var debugDescription: String { self.name }
    package var customMirror: Mirror { Mirror(self, children: ["name": self.name], displayStyle: .struct) }
}
