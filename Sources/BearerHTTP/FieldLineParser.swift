/// Parses the field lines of a head (RFC 9112 §5) into byte ranges.
///
/// `bytes` is a whole head whose line endings the `HeadScanner` already checked; parsing starts at
/// the first field line and stops at the empty line. Rejects obs-fold, whitespace before the colon,
/// invalid name characters, and control characters (a bare CR, NUL) in values.
func parseFieldLines(
    _ bytes: UnsafeRawBufferPointer,
    from start: Int,
    maximumCount: Int,
    into fields: inout [HTTPField]
) throws(HTTPParseError) {
    var index = start
    let end = bytes.count
    while index < end {
        let first = bytes[index]
        if first == ASCII.cr {
            guard index + 2 == end, bytes[index + 1] == ASCII.lf else { throw .bareCarriageReturn }
            return
        }
        if first.isOptionalWhitespace { throw .obsoleteLineFolding }

        let nameStart = index
        while bytes[index].isTokenCharacter { index += 1 }
        let separator = bytes[index]
        if separator != ASCII.colon {
            if separator.isOptionalWhitespace { throw .whitespaceBeforeColon }
            if separator == ASCII.nul { throw .nulByte }
            throw .invalidFieldName
        }
        if index == nameStart { throw .invalidFieldName }
        let name = nameStart..<index
        index += 1

        while bytes[index].isOptionalWhitespace { index += 1 }
        let valueStart = index
        index = skipPlainValueBytes(bytes, from: index, end: end)
        while true {
            let byte = bytes[index]
            if byte.isFieldValueCharacter {
                index += 1
                continue
            }
            if byte == ASCII.cr { break }
            if byte == ASCII.nul { throw .nulByte }
            throw .invalidFieldValue
        }
        guard bytes[index + 1] == ASCII.lf else { throw .bareCarriageReturn }
        var valueEnd = index
        while valueEnd > valueStart && bytes[valueEnd - 1].isOptionalWhitespace { valueEnd -= 1 }
        index += 2

        guard fields.count < maximumCount else { throw .tooManyFields }
        fields.append(HTTPField(name: name, value: valueStart..<valueEnd, knownName: KnownFieldName(bytes, name)))
    }
    throw .bareCarriageReturn
}

/// Skips value bytes eight at a time while none of them needs a closer look: returns the index of the
/// first word holding a byte below 0x20 (the CR that ends the line, a tab, a control character) or
/// DEL; the byte loop takes it from there. Bytes of 0x80 and above (obs-text) pass, as they do there.
@inline(__always)
func skipPlainValueBytes(_ bytes: UnsafeRawBufferPointer, from start: Int, end: Int) -> Int {
    guard let base = bytes.baseAddress else { return start }
    var index = start
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    while index + 8 <= end {
        let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        // A byte below 0x20 among the ASCII ones: the classic "has a byte less than n" test.
        let belowSpace = (word &- ones &* 0x20) & ~word & highs
        // A DEL byte: a zero byte in word XOR 0x7F… .
        let del = word ^ (ones &* 0x7F)
        let isDel = (del &- ones) & ~del & highs
        if belowSpace | isDel != 0 { break }
        index += 8
    }
    return index
}

/// Calls `body` with the range of each non-empty element of a comma-separated field value, trimmed.
package func forEachListElement(
    _ bytes: UnsafeRawBufferPointer,
    _ value: Range<Int>,
    _ body: (Range<Int>) throws(HTTPParseError) -> Void
) throws(HTTPParseError) {
    var index = value.lowerBound
    while index < value.upperBound {
        var elementStart = index
        while elementStart < value.upperBound && bytes[elementStart].isOptionalWhitespace { elementStart += 1 }
        var elementEnd = elementStart
        while elementEnd < value.upperBound && bytes[elementEnd] != ASCII.comma { elementEnd += 1 }
        index = elementEnd + 1
        var trimmedEnd = elementEnd
        while trimmedEnd > elementStart && bytes[trimmedEnd - 1].isOptionalWhitespace { trimmedEnd -= 1 }
        if trimmedEnd > elementStart {
            try body(elementStart..<trimmedEnd)
        }
    }
}
