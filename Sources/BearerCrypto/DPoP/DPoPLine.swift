import BearerCore
import BearerHTTP

/// The `DPoP` field of a request the proxy sends upstream with a DPoP-bound token (RFC 9449 §7.1):
/// `Authorization: DPoP <token>` (the token session's line) and, beside it, a proof made for this
/// request alone (docs/token-sources.md, "Sender-constrained tokens: DPoP").
package enum DPoPLine {
    package static let authorizationPrefix = Array("Authorization: DPoP ".utf8)

    /// Whether `line` is a DPoP-bound token's `Authorization` line. A bearer line is told apart by
    /// one byte (`Authorization: B…`), before the prefix (a lazily made global) is looked at.
    @inlinable
    package static func isDPoPBound(_ line: [UInt8]) -> Bool {
        line.count > 22 && line[15] == UInt8(ascii: "D") && line.starts(with: Self.authorizationPrefix)
    }

    /// Whether the field name at `range` is `DPoP`, in any case: a client's own proof.
    package static func isDPoPFieldName(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        range.count == 4
            && zip(range, "dpop".utf8).allSatisfy { index, lowercase in raw[index] | 0x20 == lowercase }
    }

    /// The token in a DPoP `Authorization` line: between the scheme and the CRLF.
    static func token(of line: [UInt8]) -> ArraySlice<UInt8> {
        line[Self.authorizationPrefix.count..<(line.count - 2)]
    }
}

extension ByteBuffer {
    /// Writes `DPoP: <proof>\r\n` for a request of `method` to `scheme://authority` and the path
    /// just written at `pathBytes` (offsets among the readable bytes; the query and fragment are cut),
    /// carrying the token of `line` (its `ath`) and `origin`'s newest nonce.
    package mutating func writeDPoPProof(
        _ prover: DPoPProver,
        method: UnsafeRawBufferPointer,
        origin: Origin,
        authority: [UInt8],
        pathBytes: Range<Int>,
        line: [UInt8]
    ) {
        var targetURI = Array(origin.isHTTPS ? "https://".utf8 : "http://".utf8)
        targetURI.reserveCapacity(targetURI.count + authority.count + pathBytes.count)
        targetURI.append(contentsOf: authority)
        self.withUnsafeReadableBytes { raw in
            for index in pathBytes {
                let byte = raw[index]
                if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
                targetURI.append(byte)
            }
        }
        // OPTIONS * names the server itself: its URI has no path.
        if targetURI.last == UInt8(ascii: "*") { targetURI.removeLast() }
        self.writeStaticString("DPoP: ")
        prover.writeProof(
            method: method,
            targetURI: targetURI,
            accessTokenHash: prover.accessTokenHash(ofLine: line),
            nonce: prover.nonces.nonce(for: origin),
            to: &self
        )
        self.writeStaticString("\r\n")
    }
}
