/// A growable byte buffer with separate read and write positions.
///
/// Connections read straight into its writable tail and parsers look at its readable bytes in place,
/// so bytes are copied at most once between the kernel and the other side of the proxy. A value type
/// with copy-on-write storage; the hot path keeps one per connection and mutates it in place.
///
/// Public, with its hot members `@inlinable public`, for one reason: this compiler inlines across
/// modules only public inlinable bodies (`@inlinable package` ones are called, not inlined), and
/// every module of the data path uses this type on every byte. Nothing outside the package uses it.
public struct ByteBuffer: Sendable {
    /// Nil until the first byte is written: an idle connection's buffers hold no memory.
    @usableFromInline var storage: ByteStorage?
    @usableFromInline var _readerIndex: Int
    @usableFromInline var _writerIndex: Int

    @inlinable
    public init(capacity: Int = 0) {
        self.storage = capacity > 0 ? ByteStorage(capacity: capacity) : nil
        self._readerIndex = 0
        self._writerIndex = 0
    }

    @inlinable
    public init(bytes: some Collection<UInt8>) {
        self.init(capacity: 0)
        self.writeBytes(Array(bytes))
    }

    @inlinable
    public init(string: String) {
        self.init(bytes: Array(string.utf8))
    }

    @inlinable public var readerIndex: Int { self._readerIndex }
    @inlinable public var writerIndex: Int { self._writerIndex }
    @inlinable public var readableBytes: Int { self._writerIndex - self._readerIndex }
    @inlinable public var writableBytes: Int { self.capacity - self._writerIndex }
    @inlinable public var isEmpty: Bool { self._writerIndex == self._readerIndex }
    @inlinable public var capacity: Int { self.storage?.capacity ?? 0 }

    /// Makes room for at least `minimumWritable` more bytes in storage this buffer alone owns: first
    /// by moving unread bytes to the front, else by moving them to larger storage.
    @inlinable
    public mutating func reserveWritable(_ minimumWritable: Int) {
        let isUnique = isKnownUniquelyReferenced(&self.storage)
        if isUnique && self.writableBytes >= minimumWritable { return }
        if isUnique && self._readerIndex > 0 && self.capacity - self.readableBytes >= minimumWritable {
            self.discardReadBytes()
            return
        }
        let readable = self.readableBytes
        var newCapacity = Swift.max(self.capacity, 256)
        while newCapacity < readable + minimumWritable { newCapacity *= 2 }
        let replacement = ByteStorage(capacity: newCapacity)
        if readable > 0, let old = self.storage {
            replacement.pointer.copyMemory(from: old.pointer + self._readerIndex, byteCount: readable)
        }
        self.storage = replacement
        self._readerIndex = 0
        self._writerIndex = readable
    }

    /// Moves the unread bytes to the start of the storage.
    @inlinable
    public mutating func discardReadBytes() {
        if self._readerIndex == 0 { return }
        guard isKnownUniquelyReferenced(&self.storage), let storage = self.storage else {
            self.reserveWritable(0)
            return
        }
        let count = self.readableBytes
        if count > 0 {
            // copyMemory is memmove: the ranges may overlap.
            storage.pointer.copyMemory(from: storage.pointer + self._readerIndex, byteCount: count)
        }
        self._readerIndex = 0
        self._writerIndex = count
    }

    /// Forgets every byte, keeping the storage.
    @inlinable
    public mutating func clear() {
        self._readerIndex = 0
        self._writerIndex = 0
    }

    /// Forgets what was written from `index` on (an absolute index, not before the unread bytes):
    /// a write that could not be finished, taken back.
    @inlinable
    public mutating func moveWriterIndex(to index: Int) {
        precondition(
            index >= self._readerIndex && index <= self._writerIndex,
            "writer index moved outside the written bytes"
        )
        self._writerIndex = index
    }

    @inlinable
    public mutating func moveReaderIndex(forwardBy count: Int) {
        precondition(count >= 0 && count <= self.readableBytes, "reader index moved past the written bytes")
        self._readerIndex += count
        if self._readerIndex == self._writerIndex {
            self._readerIndex = 0
            self._writerIndex = 0
        }
    }

    /// Lets `body` fill the writable tail (for example with `read(2)`); it returns how many bytes it wrote.
    @inlinable
    public mutating func writeWithUnsafeMutableBytes(
        minimumWritable: Int,
        _ body: (UnsafeMutableRawBufferPointer) throws -> Int
    ) rethrows -> Int {
        self.reserveWritable(Swift.max(minimumWritable, 1))
        let start = self._writerIndex
        let writable = self.capacity - start
        // Only the address is taken out (as in `withUnsafeReadableBytes`).
        let written = try body(UnsafeMutableRawBufferPointer(start: self.storage!.pointer + start, count: writable))
        precondition(written >= 0 && written <= writable)
        self._writerIndex += written
        return written
    }

    /// Calls `body` with the readable bytes, which stay valid only during the call.
    @inlinable
    public func withUnsafeReadableBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // Only the address is taken out: a reference to the storage held across `body` was retained and
        // released around it, on every send, read and parse. `self` (borrowed for the call, which
        // `body` may not change) keeps the storage alive while `body` runs.
        guard let base = self.storage?.pointer else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: base + self._readerIndex, count: self.readableBytes))
    }

    @inlinable
    public mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        if count == 0 { return }
        self.reserveWritable(count)
        (self.storage!.pointer + self._writerIndex).copyMemory(from: bytes.baseAddress!, byteCount: count)
        self._writerIndex += count
    }

    @inlinable
    public mutating func writeBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.writeBytes($0) }
    }

    @inlinable
    public mutating func writeBytes(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { self.writeBytes($0) }
    }

    @inlinable
    public mutating func writeBuffer(_ other: ByteBuffer) {
        other.withUnsafeReadableBytes { self.writeBytes($0) }
    }

    @inlinable
    public mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { self.writeBytes(UnsafeRawBufferPointer($0)) }
    }

    @inlinable
    public mutating func writeStaticString(_ string: StaticString) {
        self.writeBytes(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    @inlinable
    public mutating func writeByte(_ byte: UInt8) {
        self.reserveWritable(1)
        self.storage!.pointer.storeBytes(of: byte, toByteOffset: self._writerIndex, as: UInt8.self)
        self._writerIndex += 1
    }

    /// Writes `value` in decimal ASCII without going through `String`.
    @inlinable
    public mutating func writeDecimal(_ value: Int) {
        withDecimalDigits(of: value) { self.writeBytes($0) }
    }

    /// Writes `value` in lower-case hexadecimal ASCII (chunk sizes).
    @inlinable
    public mutating func writeHexadecimal(_ value: Int) {
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
        self.withUnsafeReadableBytes { Array($0) }
    }

    /// Removes and returns up to `count` readable bytes (edges only).
    package mutating func readBytes(_ count: Int) -> [UInt8] {
        let count = Swift.min(count, self.readableBytes)
        let bytes = self.withUnsafeReadableBytes { Array($0.prefix(count)) }
        self.moveReaderIndex(forwardBy: count)
        return bytes
    }
}

/// The bytes of a `ByteBuffer`: allocated once, shared between copies until one of them writes.
@usableFromInline
final class ByteStorage: @unchecked Sendable {
    @usableFromInline let pointer: UnsafeMutableRawPointer
    @usableFromInline let capacity: Int

    @inlinable
    init(capacity: Int) {
        self.capacity = capacity
        self.pointer = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        self.pointer.deallocate()
    }
}

extension ByteBuffer: Equatable {
    public static func == (lhs: ByteBuffer, rhs: ByteBuffer) -> Bool {
        lhs.withUnsafeReadableBytes { left in
            rhs.withUnsafeReadableBytes { right in
                left.elementsEqual(right)
            }
        }
    }
}

extension ByteBuffer: CustomStringConvertible {
    public var description: String {
        "ByteBuffer(readable: \(self.readableBytes), capacity: \(self.capacity))"
    }
}

/// Calls `body` with `value`'s decimal ASCII digits, made without a `String` or an array.
@inlinable
public func withDecimalDigits<Result>(of value: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
    precondition(value >= 0)
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, enough for Int.max
    var remaining = UInt64(value)
    var count = 0
    return withUnsafeMutableBytes(of: &digits) { scratch in
        repeat {
            scratch[23 - count] = UInt8(truncatingIfNeeded: remaining % 10) &+ 0x30
            remaining /= 10
            count += 1
        } while remaining > 0
        return body(UnsafeRawBufferPointer(rebasing: scratch[(24 - count)...]))
    }
}
