import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's low-level functions, over a context on the stack: DPoP
/// hashes every proof on the data path, and OpenSSL 3's one-shot `SHA256()` fetches the digest by
/// name and makes, initialises and frees an EVP context per call (callgrind: about 17,000
/// instructions for a 600-byte proof, against what the compression itself costs).
package func sha256(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutablePointer<UInt8>) {
    cos_sha256(bytes.baseAddress, bytes.count, digest)
}

/// The 32-byte digest of `bytes`.
package func sha256(_ bytes: [UInt8]) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: Int(SHA256_DIGEST_LENGTH)) { digest, count in
        bytes.withUnsafeBytes { sha256($0, into: digest.baseAddress!) }
        count = Int(SHA256_DIGEST_LENGTH)
    }
}
