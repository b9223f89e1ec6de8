import COpenSSL

/// SHA-1, for the one place a protocol fixes it: a WebSocket handshake's `Sec-WebSocket-Accept`
/// (RFC 6455 §4.2.2, which the demo's mock API answers). Never for anything that needs security.
package func sha1(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
    _ = bytes.withUnsafeBufferPointer { SHA1($0.baseAddress, $0.count, &digest) }
    return digest
}
