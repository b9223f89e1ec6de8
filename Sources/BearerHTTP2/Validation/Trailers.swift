/// Checks a trailer section (RFC 9113 §8.1): regular fields only, by the same rules as a head's.
package func validateTrailers(_ list: HeaderList) throws(HeaderValidationError) {
    try list.bytes.withUnsafeBytesTypedThrows { (bytes) throws(HeaderValidationError) in
        if FieldRules.pseudoHeaderCount(bytes, list.fields) > 0 { throw .pseudoHeaderInTrailers }
        _ = try FieldRules.checkRegularFields(bytes, list.fields[...])
    }
}
