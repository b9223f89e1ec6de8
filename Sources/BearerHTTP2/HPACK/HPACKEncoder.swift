import Glibc

/// Encodes header lists into header blocks (RFC 7541 §6) with one connection direction's dynamic
/// table, deterministically, so that RFC 7541 Appendix C's examples come out byte for byte.
///
/// The choices the RFC leaves open, made the way Appendix C makes them: a field wholly in a table is
/// sent as its index (the static table first, then the newest dynamic entry); otherwise its name's
/// lowest index, if any, with the value as a literal; strings are Huffman-coded unless that is longer
/// (`huffman`; C.6.2 codes "307", 3 bytes either way, with Huffman). `authorization` is always
/// encoded never-indexed whatever the list says (§7.1.3): a token must never sit in a table an intermediary keeps, nor be guessed by probing one.
package struct HPACKEncoder: Sendable {
    package enum HuffmanPolicy: Sendable {
        case never
        case unlessLonger
    }

    private(set) var table: DynamicTable
    /// The largest table this side is willing to keep, whatever the peer allows.
    package let ownLimit: Int
    package var huffman: HuffmanPolicy
    /// Size updates owed at the start of the next block: the smallest size since the last block and
    /// the final one (RFC 7541 §4.2: both are signalled when the smallest is below the final).
    private var pendingSmallest: Int?
    private var pendingFinal: Int?

    /// `maxTableSize` is the size both sides start with (SETTINGS_HEADER_TABLE_SIZE's default, or
    /// what the examples of Appendix C assume), at most `ownLimit`.
    package init(
        maxTableSize: Int = HTTP2.defaultHeaderTableSize,
        ownLimit: Int = HTTP2.defaultHeaderTableSize,
        huffman: HuffmanPolicy = .unlessLonger
    ) {
        self.ownLimit = ownLimit
        self.table = DynamicTable(maxSize: min(maxTableSize, ownLimit))
        self.huffman = huffman
        // Keeping less than the peer's decoder assumes must be signalled, or the two evict differently.
        if ownLimit < maxTableSize { self.pendingFinal = ownLimit }
    }

    package var tableEntries: [(String, String)] {
        self.table.newestFirst.map {
            (String(decoding: $0.name, as: UTF8.self), String(decoding: $0.value, as: UTF8.self))
        }
    }
    package var tableSize: Int { self.table.size }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE arrived: the table follows it (within `ownLimit`), and
    /// the next block tells the peer's decoder so.
    package mutating func setMaxTableSize(_ peerSetting: Int) {
        let size = min(peerSetting, self.ownLimit)
        guard size != self.table.maxSize || self.pendingFinal != nil else { return }
        self.pendingSmallest = min(self.pendingSmallest ?? size, size)
        self.pendingFinal = size
        self.table.resize(to: size)
    }

    /// Appends the header block for `list` to `output`.
    package mutating func encode(_ list: HeaderList, into output: inout [UInt8]) {
        if let final = self.pendingFinal {
            if let smallest = self.pendingSmallest, smallest < final {
                HPACKInteger.write(smallest, prefixBits: 5, flags: 0x20, into: &output)
            }
            HPACKInteger.write(final, prefixBits: 5, flags: 0x20, into: &output)
            self.pendingSmallest = nil
            self.pendingFinal = nil
        }
        for index in list.fields.indices {
            let name = list.name(index)
            let value = list.value(index)
            let indexing = name.elementsEqual("authorization".utf8) ? .neverIndexed : list.fields[index].indexing
            self.encode(name: name, value: value, indexing: indexing, into: &output)
        }
    }

    private mutating func encode(
        name: ArraySlice<UInt8>,
        value: ArraySlice<UInt8>,
        indexing: HPACKIndexing,
        into output: inout [UInt8]
    ) {
        let (fullMatch, nameMatch) = self.search(name: name, value: value)
        if indexing != .neverIndexed, let fullMatch {
            HPACKInteger.write(fullMatch, prefixBits: 7, flags: 0x80, into: &output)
            return
        }
        let (prefixBits, flags): (Int, UInt8) =
            switch indexing {
            case .incremental: (6, 0x40)
            case .withoutIndexing: (4, 0x00)
            case .neverIndexed: (4, 0x10)
            }
        HPACKInteger.write(nameMatch ?? 0, prefixBits: prefixBits, flags: flags, into: &output)
        if nameMatch == nil { self.writeString(name, into: &output) }
        self.writeString(value, into: &output)
        if indexing == .incremental { self.table.insert(name: name, value: value) }
    }

    /// The absolute index of a field equal to this one, and the lowest index of one with its name.
    /// Lengths are compared before bytes, and the static table is searched only among the names of
    /// this length: every response's fields went through the whole table, 4% of an HTTP/2 request's CPU.
    private func search(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>) -> (full: Int?, name: Int?) {
        name.withUnsafeBytes { name in
            value.withUnsafeBytes { value in self.search(name: name, value: value) }
        }
    }

    private func search(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> (full: Int?, name: Int?) {
        var nameMatch: Int?
        let staticMatch = StaticTable.list.bytes.withUnsafeBytes { table -> Int? in
            for position in StaticTable.positions(ofNameLength: name.count) {
                let field = StaticTable.list.fields[position]
                guard Self.equal(table, field.name, name) else { continue }
                if Self.equal(table, field.value, value) { return position + 1 }
                nameMatch = nameMatch ?? position + 1
            }
            return nil
        }
        if let staticMatch { return (staticMatch, nameMatch ?? staticMatch) }
        return self.table.bytes.withUnsafeBytes { table in
            var dynamicIndex = 1
            while dynamicIndex <= self.table.count {
                let entry = self.table[dynamicIndex]
                if Self.equal(table, entry.name, name) {
                    if Self.equal(table, entry.value, value) { return (StaticTable.count + dynamicIndex, nameMatch) }
                    nameMatch = nameMatch ?? StaticTable.count + dynamicIndex
                }
                dynamicIndex += 1
            }
            return (nil, nameMatch)
        }
    }

    /// Whether the bytes `range` of a table's storage are `bytes`.
    @inline(__always)
    private static func equal(
        _ table: UnsafeRawBufferPointer,
        _ range: Range<Int>,
        _ bytes: UnsafeRawBufferPointer
    ) -> Bool {
        guard range.count == bytes.count else { return false }
        return bytes.isEmpty || memcmp(table.baseAddress! + range.lowerBound, bytes.baseAddress!, bytes.count) == 0
    }

    private func writeString(_ string: ArraySlice<UInt8>, into output: inout [UInt8]) {
        let huffmanCount = self.huffman == .unlessLonger ? HuffmanCode.encodedCount(string) : Int.max
        if huffmanCount <= string.count {
            HPACKInteger.write(huffmanCount, prefixBits: 7, flags: 0x80, into: &output)
            HuffmanCode.encode(string, into: &output)
        } else {
            HPACKInteger.write(string.count, prefixBits: 7, flags: 0x00, into: &output)
            output.append(contentsOf: string)
        }
    }
}
