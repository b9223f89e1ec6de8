/// Why a header block cannot be decoded (RFC 7541).
///
/// Every case ends the connection (RFC 9113 §4.3: the decoder's table is shared by every stream, so
/// after a failed block the two sides' tables can no longer be trusted to agree). A block whose
/// decoded size passes the bound is `headerListTooLarge`: the defence against HPACK bombs.
package enum HPACKError: Error, Equatable, Sendable {
    case truncated
    case integerTooLarge
    case indexOutOfRange(Int)
    case indexZero
    case tableSizeUpdateTooLarge(Int, limit: Int)
    case tableSizeUpdateAfterField
    case tableSizeUpdateMissing
    case huffmanEndOfString
    case huffmanInvalidPadding
    case headerListTooLarge(limit: Int)

    /// One line a person can act on. Never contains header bytes.
    package var message: String {
        switch self {
        case .truncated: "header block ended inside a field representation"
        case .integerTooLarge: "HPACK integer larger than 2^31-1"
        case .indexOutOfRange(let index): "HPACK index \(index) is in neither the static nor the dynamic table"
        case .indexZero: "HPACK index 0 is not a field"
        case .tableSizeUpdateTooLarge(let size, let limit):
            "dynamic table size update to \(size) exceeds SETTINGS_HEADER_TABLE_SIZE \(limit)"
        case .tableSizeUpdateAfterField: "dynamic table size update after a field in the same header block"
        case .tableSizeUpdateMissing:
            "header block does not start with the dynamic table size update the settings require"
        case .huffmanEndOfString: "Huffman-coded string contains the EOS symbol"
        case .huffmanInvalidPadding: "Huffman-coded string's padding is longer than 7 bits or not all ones"
        case .headerListTooLarge(let limit): "decoded header list larger than \(limit) bytes"
        }
    }
}
