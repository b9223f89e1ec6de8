/// HPACK's prefix integers (RFC 7541 §5.1): a value in the low `prefixBits` of a first byte whose high
/// bits carry a representation's flags, continued in 7-bit groups when it does not fit.
enum HPACKInteger {
    /// The largest integer accepted, 2^31-1: more than any length or index a bounded peer needs, and
    /// small enough that no continuation can overflow an `Int` (a 10-byte run of 0xff would).
    static let maximum = 2_147_483_647

    /// Appends `value` with `flags` in the first byte's bits above the prefix.
    static func write(_ value: Int, prefixBits: Int, flags: UInt8, into output: inout [UInt8]) {
        precondition(value >= 0 && (1...8).contains(prefixBits))
        let limit = (1 << prefixBits) - 1
        if value < limit {
            output.append(flags | UInt8(value))
            return
        }
        output.append(flags | UInt8(limit))
        var remaining = value - limit
        while remaining >= 128 {
            output.append(UInt8(remaining & 0x7f) | 0x80)
            remaining >>= 7
        }
        output.append(UInt8(remaining))
    }

    /// Reads an integer whose first byte is `input[position]`, advancing `position` past it.
    static func read(
        _ input: UnsafeRawBufferPointer,
        at position: inout Int,
        prefixBits: Int
    ) throws(HPACKError) -> Int {
        guard position < input.count else { throw .truncated }
        let limit = (1 << prefixBits) - 1
        var value = Int(input[position]) & limit
        position += 1
        if value < limit { return value }
        var shift = 0
        while true {
            guard position < input.count else { throw .truncated }
            let byte = input[position]
            position += 1
            value += Int(byte & 0x7f) << shift
            if value > Self.maximum { throw .integerTooLarge }
            if byte & 0x80 == 0 { return value }
            shift += 7
            // Zero-valued continuation bytes add nothing but still cost a read: cap them too.
            if shift > 28 { throw .integerTooLarge }
        }
    }
}
