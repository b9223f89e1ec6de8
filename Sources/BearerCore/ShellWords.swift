/// `value` in single quotes, each `'` in it written `'\''`: a POSIX shell reads it back unchanged,
/// whatever it holds (spaces, `$`, backquotes, newlines).
package func shellQuoted(_ value: String) -> String {
    "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: #"'\''"#) + "'"
}

/// `value` as one word of a command line to copy: as it is when a shell reads it back unchanged (a
/// plain path), else `shellQuoted`.
package func shellWord(_ value: String) -> String {
    let plain =
        !value.isEmpty
        && value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default: "/._-+,:@%".utf8.contains(byte)
            }
        }
    return plain ? value : shellQuoted(value)
}
