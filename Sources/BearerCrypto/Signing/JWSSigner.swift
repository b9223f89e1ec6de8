import BearerCore
import COpenSSL

/// Signs JWTs in JWS compact serialization (RFC 7515 §7.1) with one key and one protected header,
/// both fixed when the signer is made.
///
/// Made once (at start, or once per key) and kept: the header's base64url text is computed here, so
/// each token costs only its claims' bytes, one digest-and-sign and the base64url of the result — no
/// Foundation, no JSON parsing. Client assertions and JWT bearer grants use it per token request;
/// DPoP proofs (RFC 9449: `typ` `dpop+jwt`, the public key as `jwk`) can use it per request on the
/// data path.
package struct JWSSigner: Sendable {
    package let key: SigningKey
    /// base64url(header) followed by ".": the start of every token this signer makes.
    private let signingInputPrefix: [UInt8]

    /// A signer whose header names the key's algorithm, and `type` (`typ`), `keyID` (`kid`) when
    /// given; `embedsPublicKey` adds the public key as `jwk` (RFC 7515 §4.1.3).
    package init(key: SigningKey, type: String? = nil, keyID: String? = nil, embedsPublicKey: Bool = false) {
        var header = JSONObjectWriter()
        header.add("alg", key.algorithm.rawValue)
        if let type { header.add("typ", type) }
        if let keyID { header.add("kid", keyID) }
        if embedsPublicKey { header.add("jwk", key.publicJWK) }
        self.key = key
        self.signingInputPrefix = Base64URL.encode(header.encoded) + [UInt8(ascii: ".")]
    }

    /// The signed token, `header.claims.signature`; nil only if OpenSSL fails to sign.
    package func sign(_ claims: JSONObjectWriter) -> [UInt8]? {
        var token = ByteBuffer()
        guard self.write(claims, to: &token) else { return nil }
        return token.readableBytesArray
    }

    /// Writes the signed token at the end of `buffer`, with no copy of its own: the signing input is
    /// encoded into the buffer and signed where it lies (a DPoP proof goes straight into the head
    /// sent upstream). False, with nothing written, only if OpenSSL fails to sign.
    package func write(_ claims: consuming JSONObjectWriter, to buffer: inout ByteBuffer) -> Bool {
        // Where the token starts among the readable bytes: growing the buffer may move them, and
        // its indices with them, but not their order.
        let offset = buffer.readableBytes
        buffer.writeBytes(self.signingInputPrefix)
        claims.withEncodedBytes { buffer.writeBase64URL($0) }
        let signature = buffer.withUnsafeReadableBytes { readable in
            self.key.sign(UnsafeRawBufferPointer(rebasing: readable[offset...]))
        }
        guard let signature else {
            buffer.moveWriterIndex(to: buffer.readerIndex + offset)
            return false
        }
        buffer.writeByte(UInt8(ascii: "."))
        signature.withUnsafeBytes { buffer.writeBase64URL($0) }
        return true
    }

    /// A fresh `jti` (RFC 7519 §4.1.7): 128 random bits from OpenSSL's generator, base64url.
    package static func newTokenID() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        precondition(RAND_bytes(&bytes, Int32(bytes.count)) == 1, "OpenSSL's random generator failed")
        return Base64URL.encodedString(bytes)
    }
}
