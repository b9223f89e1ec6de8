import BearerCore
import BearerHTTP
import BearerTestSupport
import Testing

@testable import BearerCrypto
@testable import BearerProxy

/// The head the proxy writes upstream, with a DPoP-bound token's proof.
@Suite struct RequestHeadWriterTests {
    /// The head goes into the upstream's outbound buffer, which may still hold unsent bytes at a
    /// moved reader index: growing it for the head moves them to the front (whichever write of the
    /// head finds it full), and the proof's htu must still be the path just written, not the bytes
    /// now at its old place.
    @Test func theProofInAForwardedHeadNamesItsPathWhereverTheBufferMoves() throws {
        let keyFile = try ScratchSpace.newDirectory("dpop") + "/key.pem"
        let prover = DPoPProver(key: try DPoPKeyFile.loadOrCreate(keyFile), keyFile: keyFile)
        let head = SessionRoutingTests.head("GET /v1/items/42?page=2 HTTP/1.1\r\nHost: proxy")
        let target = Target(
            origin: Origin(isHTTPS: true, host: "api.example.com", port: 443),
            authority: Array("api.example.com".utf8),
            pathPrefix: Array("/base".utf8),
            session: nil,
            injectsToken: false
        )
        let offset = try #require(
            head.bytes.indices.first { head.bytes[$0...].starts(with: Array("/v1".utf8)) }
        )
        let path = ForwardedPath.prefixed(offset..<(offset + "/v1/items/42?page=2".utf8.count))
        // A new buffer has 256 bytes: `unsent` of them wait to go, after `sent` that went.
        for filled in 200...256 {
            let unsent = 5
            var buffer = ByteBuffer()
            buffer.writeBytes([UInt8](repeating: UInt8(ascii: "x"), count: filled))
            buffer.moveReaderIndex(forwardBy: filled - unsent)
            buffer.writeForwardedRequestHead(
                head,
                target: target,
                path: path,
                authorization: Array("Authorization: DPoP token-1\r\n".utf8),
                dpop: prover
            )
            let written = String(decoding: buffer.readableBytesArray.dropFirst(unsent), as: UTF8.self)
            #expect(written.hasPrefix("GET /base/v1/items/42?page=2 HTTP/1.1\r\n"))
            let proofLine = try #require(written.split(separator: "\r\n").first { $0.hasPrefix("DPoP: ") })
            let verified = try MockDPoPVerifier.verify(String(proofLine.dropFirst(6))).get()
            #expect(verified.htu == "https://api.example.com/base/v1/items/42", "\(filled) bytes in the buffer")
            #expect(verified.ath == MockDPoPVerifier.accessTokenHash("token-1"))
        }
    }
}
