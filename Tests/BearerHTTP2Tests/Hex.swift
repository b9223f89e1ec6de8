/// The bytes of a hex dump as RFC 7541 Appendix C prints them ("8286 8441 0f77"), spaces ignored.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { $0 != 0x20 && $0 != 0x0a })
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map {
        UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
