/// HPACK's static table (RFC 7541 Appendix A): indices 1–61, before the dynamic table's.
enum StaticTable {
    static let entries: [(name: [UInt8], value: [UInt8])] = [
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
    ].map { (Array($0.0.utf8), Array($0.1.utf8)) }

    static var count: Int { 61 }

    /// The positions in `entries` of the names `length` bytes long, in order.
    static func positions(ofNameLength length: Int) -> [Int] {
        length < byNameLength.count ? byNameLength[length] : []
    }

    private static let byNameLength: [[Int]] = {
        var table = [[Int]](repeating: [], count: (entries.map(\.name.count).max() ?? 0) + 1)
        for (position, entry) in entries.enumerated() { table[entry.name.count].append(position) }
        return table
    }()
}
