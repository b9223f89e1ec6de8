import BearerCrypto
import FoundationEssentials

/// Just enough of RFC 6455 for the mocks and the tests: the handshake's accept value, and frames.
package enum WebSocketFrames {
    /// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2).
    package static func acceptValue(for key: String) -> String {
        let input = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        return Data(sha1(input)).base64EncodedString()
    }

    package struct Frame: Equatable, Sendable {
        package var opcode: UInt8
        package var payload: [UInt8]

        package init(opcode: UInt8, payload: [UInt8]) {
            self.opcode = opcode
            self.payload = payload
        }

        package static func text(_ text: String) -> Frame { Frame(opcode: 0x1, payload: Array(text.utf8)) }
    }

    /// One final frame; clients mask theirs (RFC 6455 §5.3), servers do not.
    package static func encode(_ frame: Frame, masked: Bool) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | frame.opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        let count = frame.payload.count
        if count < 126 {
            bytes.append(maskBit | UInt8(count))
        } else if count < 65_536 {
            bytes.append(maskBit | 126)
            bytes += [UInt8(count >> 8), UInt8(count & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> ($0 * 8)) }
        }
        guard masked else { return bytes + frame.payload }
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        return bytes + key + frame.payload.enumerated().map { $1 ^ key[$0 % 4] }
    }

    /// The first complete frame in `bytes` and how many bytes it took; nil when incomplete.
    package static func decode(_ bytes: ArraySlice<UInt8>) -> (frame: Frame, consumed: Int)? {
        let start = bytes.startIndex
        guard bytes.count >= 2 else { return nil }
        let opcode = bytes[start] & 0x0F
        let isMasked = bytes[start + 1] & 0x80 != 0
        var length = Int(bytes[start + 1] & 0x7F)
        var index = start + 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            index += 2
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = bytes[index..<index + 8].reduce(0) { $0 << 8 | Int($1) }
            index += 8
        }
        var key: [UInt8] = []
        if isMasked {
            guard bytes.endIndex - index >= 4 else { return nil }
            key = Array(bytes[index..<index + 4])
            index += 4
        }
        guard bytes.endIndex - index >= length else { return nil }
        var payload = Array(bytes[index..<index + length])
        if isMasked { payload = payload.enumerated().map { $1 ^ key[$0 % 4] } }
        return (Frame(opcode: opcode, payload: payload), index + length - start)
    }
}
