import BearerCore

/// Writing a body in HTTP/1.1's chunked coding (RFC 9112 §7.1), the one place that knows its bytes:
/// the request and response bodies the proxy forwards chunked, a replayed request's kept body, the
/// mock server's chunked answers.
///
/// The parsers decode what these write (`ChunkedFramingTests`), so framing the proxy adds is framing
/// it would accept itself. A chunk is never empty: a zero-size chunk is the last one, so an empty
/// piece of body writes nothing instead of ending the body early.
extension ByteBuffer {
    /// Appends `bytes` as one chunk: its size in hexadecimal, CRLF, the bytes, CRLF.
    @inlinable
    package mutating func writeChunk(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        self.writeChunkSize(bytes.count)
        self.writeBytes(bytes)
        self.writeChunkDataEnd()
    }

    /// Appends the readable bytes of `body` as one chunk.
    @inlinable
    package mutating func writeChunk(_ body: ByteBuffer) {
        guard body.readableBytes > 0 else { return }
        self.writeChunkSize(body.readableBytes)
        self.writeBuffer(body)
        self.writeChunkDataEnd()
    }

    /// Appends a chunk's size line, for a writer that then puts exactly `count` (more than zero) bytes
    /// of data in place itself and ends them with `writeChunkDataEnd`.
    @inlinable
    package mutating func writeChunkSize(_ count: Int) {
        precondition(count > 0, "A chunk of no bytes would end the body")
        self.writeHexadecimal(count)
        self.writeStaticString("\r\n")
    }

    /// Appends the CRLF that ends a chunk's data.
    @inlinable
    package mutating func writeChunkDataEnd() {
        self.writeStaticString("\r\n")
    }

    /// Appends the last chunk and an empty trailer section: the end of a chunked body.
    @inlinable
    package mutating func writeLastChunk() {
        self.writeStaticString("0\r\n\r\n")
    }
}
