/// HPACK's static table (RFC 7541 Appendix A): indices 1–61, before the dynamic table's.
///
/// One header list, so that an entry is two ranges of one byte array, as the dynamic table's are.
enum StaticTable {
    static let list = HeaderList([
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""),
        ("cache-control", ""), ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""),
        ("content-length", ""), ("content-location", ""), ("content-range", ""), ("content-type", ""),
        ("cookie", ""), ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
        ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
        ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""),
        ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""),
        ("retry-after", ""), ("server", ""), ("set-cookie", ""), ("strict-transport-security", ""),
        ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
    ])

    static var count: Int { 61 }

    /// The positions in `list` of the names `length` bytes long, in order.
    static func positions(ofNameLength length: Int) -> [Int] {
        length < byNameLength.count ? byNameLength[length] : []
    }

    private static let byNameLength: [[Int]] = {
        var table = [[Int]](repeating: [], count: (list.fields.map(\.name.count).max() ?? 0) + 1)
        for (position, field) in list.fields.enumerated() { table[field.name.count].append(position) }
        return table
    }()
}
