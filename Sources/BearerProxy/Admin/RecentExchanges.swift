import BearerCore

/// The audit log's last lines, for the admin page's "recent exchanges": the same JSON objects the
/// audit log writes (never a token, a header or a query value), the newest last, at most `limit`.
/// Kept only while the audit log is on; shared by every loop, so behind a lock taken once a line.
package final class RecentExchanges: Sendable {
    static let limit = 100
    private let lines = Locked<[String]>([])

    func append(_ line: String) {
        self.lines.withLock { lines in
            if lines.count >= Self.limit { lines.removeFirst(lines.count + 1 - Self.limit) }
            lines.append(line)
        }
    }

    /// `[{…},…]`, oldest first.
    var json: String { "[" + self.lines.withLock { $0 }.joined(separator: ",") + "]" }
}
