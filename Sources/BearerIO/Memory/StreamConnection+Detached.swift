import BearerCore

extension StreamConnection {
    /// A stream with nothing underneath, never started: its owner's peer is another part of the
    /// proxy on the same loop, which puts bytes in `inbound` itself and takes the owner's writes out
    /// of the outbound buffer (`takeWritten`), and tells the owner when to look (an HTTP/2 stream
    /// and the exchange that serves it). No events, no pipe, no lingering: what the owner wrote waits,
    /// counted in `pendingWriteBytes` (its backpressure), until it is taken.
    package static func detached(on loop: EventLoop) -> StreamConnection {
        StreamConnection(transport: .memory(MemoryTransport.detached(on: loop)), loop: loop, isConnecting: false)
    }

    /// Moves what the owner wrote to the end of `buffer`.
    package func takeWritten(into buffer: inout ByteBuffer) {
        guard !self.outbound.isEmpty else { return }
        buffer.writeBuffer(self.outbound)
        self.outbound.clear()
        self.releaseOutbound()
    }
}
