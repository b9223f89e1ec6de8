import COpenSSL

/// Runs `body` over a read-only memory BIO holding `bytes` (PEM to parse).
package func withMemoryBIO<Result>(_ bytes: [UInt8], _ body: (OpaquePointer) -> Result?) -> Result? {
    bytes.withUnsafeBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
        defer { BIO_free(bio) }
        return body(bio)
    }
}

/// What `body` writes into a memory BIO (PEM it encodes); empty when it fails.
package func writingToMemoryBIO(_ body: (OpaquePointer) -> Bool) -> [UInt8] {
    guard let bio = BIO_new(BIO_s_mem()) else { return [] }
    defer { BIO_free(bio) }
    guard body(bio) else { return [] }
    var data: UnsafePointer<CChar>?
    let length = cos_bio_mem_data(bio, &data)
    guard let data, length > 0 else { return [] }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
        Array(UnsafeBufferPointer(start: $0, count: length))
    }
}
