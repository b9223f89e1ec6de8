import BearerCore

/// What `bearer-proxy audit FILE` prints: an audit log (`audit_log`, one JSON object a line) summed
/// up on one screen. Per session and host: the requests, their statuses, how many the rules refused,
/// waited for a refresh and were replayed; then the refused requests by rule. Lines that are not an
/// audit object (a file cut mid-line by a full disk) are counted, not fatal.
struct AuditSummary: Equatable {
    struct Row: Equatable {
        var requests = 0
        var statuses: [Int: Int] = [:]
        var refused = 0
        var refreshed = 0
        var replayed = 0
    }

    struct Place: Hashable, Comparable {
        var session: String
        var host: String

        static func < (lhs: Place, rhs: Place) -> Bool { (lhs.session, lhs.host) < (rhs.session, rhs.host) }
    }

    private(set) var rows: [Place: Row] = [:]
    /// Refused requests by session and rule.
    private(set) var refusals: [Place: Int] = [:]
    private(set) var unreadableLines = 0
    private(set) var first: String?
    private(set) var last: String?

    init(_ text: some StringProtocol) {
        for line in text.split(separator: "\n") where !line.allSatisfy(\.isWhitespace) {
            guard let record = JSONText.object(Array(line.utf8)), let status = record["status"] as? Int else {
                self.unreadableLines += 1
                continue
            }
            let session = record["session"] as? String ?? "-"
            let place = Place(session: session, host: record["host"] as? String ?? "-")
            var row = self.rows[place] ?? Row()
            row.requests += 1
            row.statuses[status, default: 0] += 1
            if record["refreshed"] as? Bool == true { row.refreshed += 1 }
            if record["replayed"] as? Bool == true { row.replayed += 1 }
            if record["decision"] as? String == "refused" {
                row.refused += 1
                self.refusals[Place(session: session, host: record["rule"] as? String ?? "-"), default: 0] += 1
            }
            self.rows[place] = row
            if let time = record["time"] as? String {
                if self.first.map({ time < $0 }) ?? true { self.first = time }
                if self.last.map({ time > $0 }) ?? true { self.last = time }
            }
        }
    }

    var text: String {
        let total = self.rows.values.reduce(0) { $0 + $1.requests }
        var lines = [
            "\(total) request\(total == 1 ? "" : "s")" + (self.first.map { ", \($0) to \(self.last ?? $0)" } ?? "")
        ]
        if self.unreadableLines > 0 {
            lines.append(
                "\(self.unreadableLines) line\(self.unreadableLines == 1 ? " is" : "s are") not an audit record"
            )
        }
        guard total > 0 else { return lines.joined(separator: "\n") + "\n" }
        var table = [["SESSION", "HOST", "REQUESTS", "REFUSED", "REFRESHED", "REPLAYED", "STATUSES"]]
        for (place, row) in self.rows.sorted(by: { $0.key < $1.key }) {
            let statuses = row.statuses.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
            table.append([
                place.session, place.host, "\(row.requests)", "\(row.refused)", "\(row.refreshed)", "\(row.replayed)",
                statuses.joined(separator: " "),
            ])
        }
        lines += Self.columns(table)
        if !self.refusals.isEmpty {
            lines.append("")
            var refused = [["SESSION", "REFUSED", "RULE"]]
            for (place, count) in self.refusals.sorted(by: { $0.key < $1.key }) {
                refused.append([place.session, "\(count)", place.host])
            }
            lines += Self.columns(refused)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Rows aligned in columns two spaces apart, the last column as it is.
    private static func columns(_ rows: [[String]]) -> [String] {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }
    }
}
