/// Byte classes of RFC 9110 §5.6 and RFC 3986, as lookup tables, so the parsers judge each byte with
/// one load instead of a chain of comparisons.
enum ByteClass {
    static let token: UInt8 = 1 << 0  // tchar
    static let fieldValue: UInt8 = 1 << 1  // field-vchar, SP, HTAB, obs-text
    static let target: UInt8 = 1 << 2  // what may stand in a request-target (visible ASCII, obs-text)
    static let reason: UInt8 = 1 << 4  // reason-phrase: HTAB, SP, VCHAR, obs-text

    static let table: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        let tokenSymbols = Array("!#$%&'*+-.^_`|~".utf8)
        for byte in 0..<256 {
            let b = UInt8(byte)
            var classes: UInt8 = 0
            let isAlpha = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            let isDigit = b >= 0x30 && b <= 0x39
            if isAlpha || isDigit || tokenSymbols.contains(b) { classes |= token }
            if b == 0x09 || (b >= 0x20 && b <= 0x7E) || b >= 0x80 { classes |= fieldValue | reason }
            if (b >= 0x21 && b <= 0x7E) || b >= 0x80 { classes |= target }
            table[byte] = classes
        }
        return table
    }()
}

extension UInt8 {
    @inline(__always) package var isTokenCharacter: Bool { ByteClass.table[Int(self)] & ByteClass.token != 0 }
    @inline(__always) package var isFieldValueCharacter: Bool { ByteClass.table[Int(self)] & ByteClass.fieldValue != 0 }
    @inline(__always) package var isTargetCharacter: Bool { ByteClass.table[Int(self)] & ByteClass.target != 0 }
    @inline(__always) package var isDigit: Bool { self >= 0x30 && self <= 0x39 }
    @inline(__always) var isOptionalWhitespace: Bool { self == 0x20 || self == 0x09 }
    @inline(__always) package var asciiLowercased: UInt8 { (self >= 0x41 && self <= 0x5A) ? self | 0x20 : self }

    /// The value of a hexadecimal digit, or nil.
    @inline(__always) var hexDigitValue: Int? {
        switch self {
        case 0x30...0x39: Int(self &- 0x30)
        case 0x41...0x46: Int(self &- 0x41 &+ 10)
        case 0x61...0x66: Int(self &- 0x61 &+ 10)
        default: nil
        }
    }
}

enum ASCII {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B
    static let slash: UInt8 = 0x2F
    static let nul: UInt8 = 0x00
}

/// Compares bytes with an ASCII string ignoring case; `lowercase` must already be lower case.
@inline(__always)
package func equalsCaseInsensitive(
    _ bytes: UnsafeRawBufferPointer,
    _ range: Range<Int>,
    _ lowercase: StaticString
) -> Bool {
    let count = lowercase.utf8CodeUnitCount
    guard range.count == count else { return false }
    let expected = lowercase.utf8Start
    var index = 0
    while index < count {
        if bytes[range.lowerBound + index].asciiLowercased != expected[index] { return false }
        index += 1
    }
    return true
}

@inline(__always)
package func equalsCaseInsensitive(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: [UInt8]) -> Bool {
    guard range.count == lowercase.count else { return false }
    var index = 0
    while index < lowercase.count {
        if bytes[range.lowerBound + index].asciiLowercased != lowercase[index] { return false }
        index += 1
    }
    return true
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` keeping the body's typed error (the standard one only rethrows `any Error`).
    /// Inlinable: called from other modules (BearerHTTP2's decoder and validation), an unspecialized
    /// copy looked its generic metadata up at run time, 4% of an HTTP/2 request's CPU.
    @inlinable
    package func withUnsafeBytesTypedThrows<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let outcome: Swift.Result<Result, Failure> = self.withUnsafeBytes { raw in
            do throws(Failure) {
                return .success(try body(raw))
            } catch {
                return .failure(error)
            }
        }
        // Consumed, not read with `get()`: that copied the value out (for a head, a retain and a
        // release on every request and response).
        switch consume outcome {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }
}
