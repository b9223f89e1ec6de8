import BearerCore
import BearerHTTP
import BearerIO
import Glibc

/// The value grammars of the config file and flags, read and written in one place, so that what
/// `--check` and the error messages print is what the parser reads back. Each parser returns nil on
/// bad input; the caller names the key and the expected form.
package enum ValueParsers {
    /// `500ms`, `30s`, `5m`, `1h`, or combinations like `1m30s`.
    static func duration(_ text: String) -> Duration? {
        var total: Duration = .zero
        var digits = ""
        var index = text.startIndex
        var sawComponent = false
        while index < text.endIndex {
            let character = text[index]
            if character.isASCII && character.isNumber {
                digits.append(character)
                index = text.index(after: index)
                continue
            }
            guard !digits.isEmpty, let value = Int64(digits), value < 1_000_000_000 else { return nil }
            let rest = text[index...]
            if rest.hasPrefix("ms") {
                total += .milliseconds(value)
                index = text.index(index, offsetBy: 2)
            } else if rest.hasPrefix("s") {
                total += .seconds(value)
                index = text.index(after: index)
            } else if rest.hasPrefix("m") {
                total += .seconds(value * 60)
                index = text.index(after: index)
            } else if rest.hasPrefix("h") {
                total += .seconds(value * 3600)
                index = text.index(after: index)
            } else {
                return nil
            }
            digits = ""
            sawComponent = true
        }
        guard digits.isEmpty, sawComponent else { return nil }
        return total
    }

    /// `512`, `512B`, `64KiB`, `1MiB`, `2GiB` (powers of 1024).
    static func size(_ text: String) -> Int? {
        let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("B", 1)]
        for (suffix, multiplier) in units where text.hasSuffix(suffix) {
            guard let value = Int(text.dropLast(suffix.count)), value >= 0, value <= Int.max / multiplier else {
                return nil
            }
            return value * multiplier
        }
        guard let value = Int(text), value >= 0 else { return nil }
        return value
    }

    static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }

    /// A comma-separated list, elements trimmed, empty elements dropped.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingBlanks() }.filter { !$0.isEmpty }
    }

    /// A comma list of `host`, `host:port` or `*.domain`: the patterns, or what was expected of the
    /// first entry that is none.
    static func hostPatterns(_ text: String) -> (patterns: [HostPattern], mistake: String?) {
        var patterns: [HostPattern] = []
        for item in Self.list(text) {
            guard let pattern = HostPattern.parse(item) else {
                return ([], "invalid entry '\(item)' (expected host, host:port or *.domain)")
            }
            patterns.append(pattern)
        }
        return (patterns, nil)
    }

    /// `30s`, `500ms`, `5m`: the shortest exact form, as the config file would say it.
    package static func format(_ duration: Duration) -> String {
        let milliseconds = duration.nanoseconds / 1_000_000
        if milliseconds % 3_600_000 == 0 && milliseconds > 0 { return "\(milliseconds / 3_600_000)h" }
        if milliseconds % 60_000 == 0 && milliseconds > 0 { return "\(milliseconds / 60_000)m" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
        return "\(milliseconds)ms"
    }

    /// `64KiB`, `1MiB`, `100B`.
    static func format(size: Int) -> String {
        if size > 0 && size % (1 << 30) == 0 { return "\(size >> 30)GiB" }
        if size > 0 && size % (1 << 20) == 0 { return "\(size >> 20)MiB" }
        if size > 0 && size % (1 << 10) == 0 { return "\(size >> 10)KiB" }
        return "\(size)B"
    }

    /// `~/x` → `$HOME/x`, so paths in the config file can name the user's home as a shell would.
    static func expandingHome(_ path: String) -> String {
        guard path.hasPrefix("~/"), let home = getenv("HOME") else { return path }
        return String(cString: home) + path.dropFirst()
    }
}
