import BearerHTTP

/// Decodes header blocks (RFC 7541 §3, §6) against one connection direction's dynamic table.
///
/// Two bounds make it safe against a hostile encoder: the dynamic table never grows past the
/// SETTINGS_HEADER_TABLE_SIZE this side advertised (a size update above it is an error), and the
/// decoded list never passes `maxHeaderListSize`, counted as RFC 9113 §6.5.2 counts it (name, value
/// and 32 per field). The bound is checked before each string is copied or Huffman-decoded and for
/// fields copied out of the tables, so a block of one-byte references to a large entry (an HPACK
/// bomb) fails after at most the bound's worth of bytes.
package struct HPACKDecoder: Sendable {
    private(set) var table: DynamicTable
    /// The SETTINGS_HEADER_TABLE_SIZE in force: the largest size update the encoder may send.
    package private(set) var maxTableSize: Int
    package var maxHeaderListSize: Int
    /// The limit was lowered below the table's size: the next block must start with an update.
    private var requiresSizeUpdate = false

    package init(maxTableSize: Int = HTTP2.defaultHeaderTableSize, maxHeaderListSize: Int) {
        self.table = DynamicTable(maxSize: maxTableSize)
        self.maxTableSize = maxTableSize
        self.maxHeaderListSize = maxHeaderListSize
    }

    /// The newest-first entries of the dynamic table as strings, with its size (tests, diagnostics).
    package var tableEntries: [(String, String)] {
        self.table.newestFirst.map {
            (String(decoding: $0.name, as: UTF8.self), String(decoding: $0.value, as: UTF8.self))
        }
    }
    package var tableSize: Int { self.table.size }

    /// This side's SETTINGS_HEADER_TABLE_SIZE changed (and the peer acknowledged it, RFC 9113 §6.5.3).
    ///
    /// A limit below the table's current maximum obliges the encoder to shrink the table with a size
    /// update at the start of its next block (RFC 7541 §4.2); one that is missing is an error.
    package mutating func setMaxTableSize(_ size: Int) {
        self.maxTableSize = size
        if size < self.table.maxSize { self.requiresSizeUpdate = true }
    }

    package mutating func decode(_ block: [UInt8]) throws(HPACKError) -> HeaderList {
        try block.withUnsafeBytesTypedThrows { (raw) throws(HPACKError) in try self.decode(raw) }
    }

    /// Decodes one whole header block into a list.
    package mutating func decode(_ block: UnsafeRawBufferPointer) throws(HPACKError) -> HeaderList {
        var list = HeaderList()
        // Room for a typical block's fields at once (indexed fields decode to more bytes than they
        // take): growing the list field by field reallocated it several times a block.
        list.reserveCapacity(bytes: 2 * block.count + 64, fields: 16)
        var position = 0
        var budget = self.maxHeaderListSize
        var seenField = false
        while position < block.count {
            let first = block[position]
            if first & 0x80 != 0 {
                let index = try HPACKInteger.read(block, at: &position, prefixBits: 7)
                try self.appendIndexed(index, to: &list, budget: &budget)
            } else if first & 0x40 != 0 {
                try self.appendLiteral(block, at: &position, prefixBits: 6, .incremental, to: &list, budget: &budget)
            } else if first & 0x20 != 0 {
                if seenField { throw .tableSizeUpdateAfterField }
                let size = try HPACKInteger.read(block, at: &position, prefixBits: 5)
                if size > self.maxTableSize { throw .tableSizeUpdateTooLarge(size, limit: self.maxTableSize) }
                self.table.resize(to: size)
                self.requiresSizeUpdate = false
                continue
            } else {
                let indexing: HPACKIndexing = first & 0x10 != 0 ? .neverIndexed : .withoutIndexing
                try self.appendLiteral(block, at: &position, prefixBits: 4, indexing, to: &list, budget: &budget)
            }
            if self.requiresSizeUpdate { throw .tableSizeUpdateMissing }
            seenField = true
        }
        if self.requiresSizeUpdate { throw .tableSizeUpdateMissing }
        return list
    }

    /// Where the entry at an absolute index is: the static table's 1–61, then the dynamic table's.
    private func entry(_ index: Int) throws(HPACKError) -> (isStatic: Bool, name: Range<Int>, value: Range<Int>) {
        if index == 0 { throw .indexZero }
        if index <= StaticTable.count {
            let field = StaticTable.list.fields[index - 1]
            return (true, field.name, field.value)
        }
        let dynamicIndex = index - StaticTable.count
        guard dynamicIndex <= self.table.count else { throw .indexOutOfRange(index) }
        let entry = self.table[dynamicIndex]
        return (false, entry.name, entry.value)
    }

    /// Appends the bytes `range` of a table's storage (the static table's, or the dynamic one's).
    private func copy(_ range: Range<Int>, fromStatic isStatic: Bool, to output: inout [UInt8]) {
        if isStatic {
            StaticTable.list.bytes.withUnsafeBytes {
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[range]))
            }
        } else {
            self.table.bytes.withUnsafeBytes { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }

    private func charge(_ count: Int, to budget: inout Int) throws(HPACKError) {
        budget -= count
        if budget < 0 { throw .headerListTooLarge(limit: self.maxHeaderListSize) }
    }

    private func appendIndexed(_ index: Int, to list: inout HeaderList, budget: inout Int) throws(HPACKError) {
        let entry = try self.entry(index)
        try self.charge(entry.name.count + entry.value.count + 32, to: &budget)
        let nameStart = list.bytes.count
        self.copy(entry.name, fromStatic: entry.isStatic, to: &list.bytes)
        let valueStart = list.bytes.count
        self.copy(entry.value, fromStatic: entry.isStatic, to: &list.bytes)
        list.appendWritten(nameStart: nameStart, valueStart: valueStart, indexing: .incremental)
    }

    private mutating func appendLiteral(
        _ block: UnsafeRawBufferPointer,
        at position: inout Int,
        prefixBits: Int,
        _ indexing: HPACKIndexing,
        to list: inout HeaderList,
        budget: inout Int
    ) throws(HPACKError) {
        try self.charge(32, to: &budget)
        let nameIndex = try HPACKInteger.read(block, at: &position, prefixBits: prefixBits)
        let nameStart = list.bytes.count
        if nameIndex == 0 {
            try self.readString(block, at: &position, into: &list.bytes, budget: &budget)
        } else {
            let entry = try self.entry(nameIndex)
            try self.charge(entry.name.count, to: &budget)
            self.copy(entry.name, fromStatic: entry.isStatic, to: &list.bytes)
        }
        let valueStart = list.bytes.count
        try self.readString(block, at: &position, into: &list.bytes, budget: &budget)
        list.appendWritten(nameStart: nameStart, valueStart: valueStart, indexing: indexing)
        if indexing == .incremental {
            self.table.insert(name: list.bytes[nameStart..<valueStart], value: list.bytes[valueStart...])
        }
    }

    /// Reads a string literal (§5.2), raw or Huffman-coded, appending it to `output`.
    private func readString(
        _ block: UnsafeRawBufferPointer,
        at position: inout Int,
        into output: inout [UInt8],
        budget: inout Int
    ) throws(HPACKError) {
        guard position < block.count else { throw .truncated }
        let isHuffman = block[position] & 0x80 != 0
        let length = try HPACKInteger.read(block, at: &position, prefixBits: 7)
        guard length <= block.count - position else { throw .truncated }
        let encoded = UnsafeRawBufferPointer(rebasing: block[position..<position + length])
        position += length
        if !isHuffman {
            try self.charge(length, to: &budget)
            output.append(contentsOf: encoded)
            return
        }
        let before = output.count
        do {
            try HuffmanCode.decode(encoded, into: &output, limit: before + budget)
        } catch .headerListTooLarge {
            throw .headerListTooLarge(limit: self.maxHeaderListSize)
        }
        budget -= output.count - before
    }
}
