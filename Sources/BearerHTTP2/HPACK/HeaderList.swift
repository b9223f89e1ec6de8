/// A header list as HPACK carries it: fields in order, each name and value a range of one byte array.
///
/// The decoder's output and the encoder's input. One array for the whole list, so decoding a block
/// allocates once, not per field; each field remembers whether it came never-indexed, because an
/// intermediary must pass such a field on never-indexed too (RFC 7541 §7.1.3).
package struct HeaderList: Equatable, Sendable {
    package struct Field: Equatable, Sendable {
        package var name: Range<Int>
        package var value: Range<Int>
        package var indexing: HPACKIndexing
    }

    package internal(set) var bytes: [UInt8] = []
    package private(set) var fields: [Field] = []

    package init() {}

    /// A list of fields given as strings (tests, the proxy's own responses), indexed incrementally.
    package init(_ fields: [(String, String)]) {
        for (name, value) in fields { self.append(name: Array(name.utf8), value: Array(value.utf8)) }
    }

    package mutating func append(
        name: some Collection<UInt8>,
        value: some Collection<UInt8>,
        indexing: HPACKIndexing = .incremental
    ) {
        let nameStart = self.bytes.count
        self.bytes.append(contentsOf: name)
        let valueStart = self.bytes.count
        self.bytes.append(contentsOf: value)
        self.fields.append(
            Field(name: nameStart..<valueStart, value: valueStart..<self.bytes.count, indexing: indexing)
        )
    }

    /// Appends a field of an HTTP/1.1 head, its name lower-cased (RFC 9113 §8.2.1). Not generic: the
    /// generic `append` is not specialized across modules, and a response's fields went through
    /// its unspecialized copy (runtime metadata lookups and all), 6% of an HTTP/2 request's CPU.
    package mutating func append(lowercasingName name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameStart = self.bytes.count
        for byte in name { self.bytes.append(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) }
        let valueStart = self.bytes.count
        self.bytes.append(contentsOf: value)
        self.fields.append(
            Field(name: nameStart..<valueStart, value: valueStart..<self.bytes.count, indexing: .incremental)
        )
    }

    /// Room for `bytes` more bytes of names and values and `fields` more fields.
    package mutating func reserveCapacity(bytes: Int, fields: Int) {
        self.bytes.reserveCapacity(self.bytes.count + bytes)
        self.fields.reserveCapacity(self.fields.count + fields)
    }

    /// Appends a field whose name and value were already written to `bytes` (the decoder's path).
    mutating func appendWritten(nameStart: Int, valueStart: Int, indexing: HPACKIndexing) {
        self.fields.append(
            Field(name: nameStart..<valueStart, value: valueStart..<self.bytes.count, indexing: indexing)
        )
    }

    package func name(_ index: Int) -> ArraySlice<UInt8> { self.bytes[self.fields[index].name] }
    package func value(_ index: Int) -> ArraySlice<UInt8> { self.bytes[self.fields[index].value] }

    /// The fields as strings (tests and diagnostics, not the data path).
    package var strings: [(String, String)] {
        self.fields.map {
            (
                String(decoding: self.bytes[$0.name], as: UTF8.self),
                String(decoding: self.bytes[$0.value], as: UTF8.self)
            )
        }
    }

    /// The list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 §6.5.2).
    package var size: Int { self.fields.reduce(0) { $0 + $1.name.count + $1.value.count + 32 } }
}

/// How a field is represented, which is whether it enters the tables of whoever decodes it
/// (RFC 7541 §6.2).
package enum HPACKIndexing: Equatable, Sendable {
    /// Added to the dynamic table (§6.2.1).
    case incremental
    /// Not added here; an intermediary may choose again (§6.2.2).
    case withoutIndexing
    /// Never added to any table along the way (§6.2.3): values that must not be guessable by
    /// probing a shared compression context, like an `authorization` token.
    case neverIndexed
}
