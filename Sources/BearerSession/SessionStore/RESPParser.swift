import BearerCore

/// Turns the bytes Redis sends into RESP2 values, however the reads split them.
///
/// A value type with no I/O, like the HTTP parsers: the connection hands it the unread bytes, it
/// answers with a value (and how many bytes it used) or asks for more. Finished elements of an
/// array that is still arriving are kept here, so their bytes are consumed at once and a long reply
/// is never scanned twice. Limits bound what a misbehaving server can make the proxy hold.
package struct RESPParser: Sendable {
    package struct Limits: Sendable {
        package var maximumLineBytes = 64 * 1024
        package var maximumBulkBytes = 16 << 20
        package var maximumArrayCount = 1 << 20
        package var maximumDepth = 16

        package init() {}
    }

    package enum Event: Equatable, Sendable {
        /// A whole value ended `consumed` bytes into the input.
        case value(RESPValue, consumed: Int)
        /// No whole value yet. The first `consumed` bytes were used (array headers and finished
        /// elements) and must not be passed again.
        case needMore(consumed: Int)
    }

    private struct PartialArray: Sendable {
        var expected: Int
        var elements: [RESPValue]
    }

    /// One element on the wire: a scalar value, or the header of an array whose elements follow.
    private enum Unit {
        case value(RESPValue)
        case arrayHeader(count: Int)
    }

    private let limits: Limits
    /// Arrays whose elements are still arriving, outermost first.
    private var open: [PartialArray] = []
    /// The next call cannot finish anything with fewer bytes than this (a bulk string's length is known).
    private var bytesNeeded = 0

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The next value in `input` (the bytes not consumed so far), or a request for more.
    package mutating func next(_ input: UnsafeRawBufferPointer) throws(RESPParseError) -> Event {
        guard input.count >= self.bytesNeeded else { return .needMore(consumed: 0) }
        self.bytesNeeded = 0
        var offset = 0
        while true {
            guard let (unit, length) = try self.unit(in: input, from: offset) else {
                return .needMore(consumed: offset)
            }
            offset += length
            var finished: RESPValue
            switch unit {
            case .value(let value):
                finished = value
            case .arrayHeader(let count):
                guard count > 0 else {
                    finished = .array([])
                    break
                }
                guard self.open.count < self.limits.maximumDepth else { throw .nestedTooDeeply }
                self.open.append(PartialArray(expected: count, elements: []))
                self.open[self.open.count - 1].elements.reserveCapacity(min(count, 64))
                continue
            }
            // A finished value may finish the arrays around it.
            while !self.open.isEmpty {
                let last = self.open.count - 1
                self.open[last].elements.append(finished)
                guard self.open[last].elements.count == self.open[last].expected else { break }
                finished = .array(self.open.removeLast().elements)
            }
            if self.open.isEmpty { return .value(finished, consumed: offset) }
        }
    }

    /// Reads one unit at `start`; nil when its bytes have not all arrived.
    private mutating func unit(
        in input: UnsafeRawBufferPointer,
        from start: Int
    ) throws(RESPParseError) -> (Unit, length: Int)? {
        guard start < input.count else { return nil }
        guard let lineEnd = try self.lineEnd(in: input, from: start) else { return nil }
        let afterLine = lineEnd + 2
        let content = (start + 1)..<lineEnd
        switch input[start] {
        case UInt8(ascii: "+"):
            return (.value(.simpleString(Self.text(input, content))), afterLine - start)
        case UInt8(ascii: "-"):
            return (.value(.error(Self.text(input, content))), afterLine - start)
        case UInt8(ascii: ":"):
            guard let value = Self.integer(input, content) else { throw .invalidInteger }
            return (.value(.integer(value)), afterLine - start)
        case UInt8(ascii: "$"):
            guard let length = Self.integer(input, content), length >= -1 else { throw .invalidLength }
            if length == -1 { return (.value(.bulkString(nil)), afterLine - start) }
            guard length <= self.limits.maximumBulkBytes else { throw .bulkStringTooLarge }
            let end = afterLine + Int(length)
            guard end + 2 <= input.count else {
                self.bytesNeeded = end + 2 - start
                return nil
            }
            guard input[end] == 0x0D, input[end + 1] == 0x0A else { throw .missingCRLF }
            return (.value(.bulkString(Array(input[afterLine..<end]))), end + 2 - start)
        case UInt8(ascii: "*"):
            guard let count = Self.integer(input, content), count >= -1 else { throw .invalidLength }
            if count == -1 { return (.value(.array(nil)), afterLine - start) }
            guard count <= self.limits.maximumArrayCount else { throw .arrayTooLarge }
            return (.arrayHeader(count: Int(count)), afterLine - start)
        case let byte:
            throw .unknownType(byte)
        }
    }

    /// Where the CR of the line starting at `start` is; nil when the line has not ended yet.
    private mutating func lineEnd(in input: UnsafeRawBufferPointer, from start: Int) throws(RESPParseError) -> Int? {
        var index = start + 1
        while index < input.count {
            switch input[index] {
            case 0x0D:
                guard index + 1 < input.count else {
                    self.bytesNeeded = index + 2 - start
                    return nil
                }
                guard input[index + 1] == 0x0A else { throw .missingCRLF }
                return index
            case 0x0A:
                throw .missingCRLF
            default:
                index += 1
            }
            if index - start > self.limits.maximumLineBytes { throw .lineTooLong }
        }
        if index - start > self.limits.maximumLineBytes { throw .lineTooLong }
        self.bytesNeeded = index + 1 - start
        return nil
    }

    private static func text(_ input: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: input[range]), as: UTF8.self)
    }

    /// `-?[0-9]+`, within Int64.
    private static func integer(_ input: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        var index = range.lowerBound
        let isNegative = index < range.upperBound && input[index] == UInt8(ascii: "-")
        if isNegative { index += 1 }
        guard index < range.upperBound else { return nil }
        var value: Int64 = 0
        while index < range.upperBound {
            let digit = input[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        return isNegative ? -value : value
    }
}

extension RESPParser.Event: IncrementalParserEvent {
    package var consumedBytes: Int {
        switch self {
        case .value(_, let consumed), .needMore(let consumed): consumed
        }
    }

    package var payload: Range<Int>? { nil }
}
