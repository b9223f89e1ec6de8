/// A growable byte buffer with separate read and write positions.
///
/// Connections read straight into its writable tail and parsers look at its readable bytes in place,
/// so bytes are copied at most once between the kernel and the other side of the proxy. Backed by a
/// `[UInt8]`, so it is a value type with copy-on-write; the hot path keeps one per connection and
/// mutates it in place.
package struct ByteBuffer: Sendable {
    @usableFromInline var storage: [UInt8]
    @usableFromInline var _readerIndex: Int
    @usableFromInline var _writerIndex: Int

    @inlinable
    package init(capacity: Int = 0) {
        self.storage = [UInt8](repeating: 0, count: capacity)
        self._readerIndex = 0
        self._writerIndex = 0
    }

    @inlinable
    package init(bytes: some Collection<UInt8>) {
        self.storage = Array(bytes)
        self._readerIndex = 0
        self._writerIndex = self.storage.count
    }

    @inlinable
    package init(string: String) {
        self.init(bytes: Array(string.utf8))
    }

    @inlinable package var readerIndex: Int { self._readerIndex }
    @inlinable package var writerIndex: Int { self._writerIndex }
    @inlinable package var readableBytes: Int { self._writerIndex - self._readerIndex }
    @inlinable package var writableBytes: Int { self.storage.count - self._writerIndex }
    @inlinable package var isEmpty: Bool { self._writerIndex == self._readerIndex }
    @inlinable package var capacity: Int { self.storage.count }

    /// Makes room for at least `minimumWritable` more bytes, first by moving unread bytes to the front.
    @inlinable
    package mutating func reserveWritable(_ minimumWritable: Int) {
        if self.writableBytes >= minimumWritable { return }
        if self._readerIndex > 0 {
            self.discardReadBytes()
            if self.writableBytes >= minimumWritable { return }
        }
        let needed = self._writerIndex + minimumWritable
        var newCapacity = Swift.max(self.storage.count * 2, 256)
        while newCapacity < needed { newCapacity *= 2 }
        self.storage.append(contentsOf: repeatElement(0, count: newCapacity - self.storage.count))
    }

    /// Moves the unread bytes to the start of the storage.
    @inlinable
    package mutating func discardReadBytes() {
        if self._readerIndex == 0 { return }
        let count = self.readableBytes
        if count > 0 {
            let from = self._readerIndex
            self.storage.withUnsafeMutableBytes { raw in
                let base = raw.baseAddress!
                memmoveBytes(base, base + from, count)
            }
        }
        self._readerIndex = 0
        self._writerIndex = count
    }

    /// Forgets every byte, keeping the storage.
    @inlinable
    package mutating func clear() {
        self._readerIndex = 0
        self._writerIndex = 0
    }

    /// Drops the storage when the buffer is empty and large, so an idle connection holds little memory.
    @inlinable
    package mutating func shrinkIfIdle(keeping limit: Int) {
        if self.isEmpty && self.storage.count > limit {
            self.storage = []
            self._readerIndex = 0
            self._writerIndex = 0
        }
    }

    @inlinable
    package mutating func moveReaderIndex(forwardBy count: Int) {
        precondition(count >= 0 && count <= self.readableBytes, "reader index moved past the written bytes")
        self._readerIndex += count
        if self._readerIndex == self._writerIndex {
            self._readerIndex = 0
            self._writerIndex = 0
        }
    }

    /// Lets `body` fill the writable tail (for example with `read(2)`); it returns how many bytes it wrote.
    @inlinable
    package mutating func writeWithUnsafeMutableBytes(
        minimumWritable: Int,
        _ body: (UnsafeMutableRawBufferPointer) throws -> Int
    ) rethrows -> Int {
        self.reserveWritable(minimumWritable)
        let start = self._writerIndex
        let written = try self.storage.withUnsafeMutableBytes { raw in
            try body(UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
        }
        precondition(written >= 0 && written <= self.storage.count - start)
        self._writerIndex += written
        return written
    }

    @inlinable
    package func withUnsafeReadableBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let start = self._readerIndex
        let end = self._writerIndex
        let outcome: Swift.Result<Result, Failure> = self.storage.withUnsafeBytes { raw in
            do throws(Failure) {
                return .success(try body(UnsafeRawBufferPointer(rebasing: raw[start..<end])))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    @inlinable
    package mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        if count == 0 { return }
        self.reserveWritable(count)
        let start = self._writerIndex
        self.storage.withUnsafeMutableBytes { raw in
            memmoveBytes(raw.baseAddress! + start, bytes.baseAddress!, count)
        }
        self._writerIndex += count
    }

    @inlinable
    package mutating func writeBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.writeBytes($0) }
    }

    @inlinable
    package mutating func writeBytes(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { self.writeBytes($0) }
    }

    @inlinable
    package mutating func writeBuffer(_ other: ByteBuffer) {
        other.withUnsafeReadableBytes { self.writeBytes($0) }
    }

    @inlinable
    package mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { self.writeBytes(UnsafeRawBufferPointer($0)) }
    }

    @inlinable
    package mutating func writeStaticString(_ string: StaticString) {
        self.writeBytes(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    @inlinable
    package mutating func writeByte(_ byte: UInt8) {
        self.reserveWritable(1)
        self.storage[self._writerIndex] = byte
        self._writerIndex += 1
    }

    /// Writes `value` in decimal ASCII without going through `String`.
    @inlinable
    package mutating func writeDecimal(_ value: Int) {
        precondition(value >= 0)
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, enough for Int.max
        var remaining = UInt64(value)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            repeat {
                scratch[23 - count] = UInt8(truncatingIfNeeded: remaining % 10) &+ 0x30
                remaining /= 10
                count += 1
            } while remaining > 0
            self.writeBytes(UnsafeRawBufferPointer(rebasing: scratch[(24 - count)...]))
        }
    }

    /// Writes `value` in lower-case hexadecimal ASCII (chunk sizes).
    @inlinable
    package mutating func writeHexadecimal(_ value: Int) {
        precondition(value >= 0)
        var digits: (UInt64, UInt64) = (0, 0)
        var remaining = UInt64(value)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            repeat {
                let nibble = UInt8(truncatingIfNeeded: remaining & 0xF)
                scratch[15 - count] = nibble < 10 ? nibble &+ 0x30 : nibble &+ 0x57
                remaining >>= 4
                count += 1
            } while remaining > 0
            self.writeBytes(UnsafeRawBufferPointer(rebasing: scratch[(16 - count)...]))
        }
    }

    /// The readable bytes as an array (tests and edges, never the hot path).
    package var readableBytesArray: [UInt8] {
        Array(self.storage[self._readerIndex..<self._writerIndex])
    }

    /// Removes and returns up to `count` readable bytes (edges only).
    package mutating func readBytes(_ count: Int) -> [UInt8] {
        let count = Swift.min(count, self.readableBytes)
        let bytes = Array(self.storage[self._readerIndex..<(self._readerIndex + count)])
        self.moveReaderIndex(forwardBy: count)
        return bytes
    }
}

@inlinable @inline(__always)
func memmoveBytes(_ destination: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ count: Int) {
    destination.copyMemory(from: source, byteCount: count)
}

extension ByteBuffer: Equatable {
    package static func == (lhs: ByteBuffer, rhs: ByteBuffer) -> Bool {
        lhs.withUnsafeReadableBytes { left in
            rhs.withUnsafeReadableBytes { right in
                left.elementsEqual(right)
            }
        }
    }
}

extension ByteBuffer: CustomStringConvertible {
    package var description: String {
        "ByteBuffer(readable: \(self.readableBytes), capacity: \(self.capacity))"
    }
}
