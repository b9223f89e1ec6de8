/// Reads `[session NAME]` lines, and knows which section the lines below one belong to.
///
/// A header that is wrong is reported, and still starts a section under the name it most likely
/// meant, so that the lines below it are checked as that session's (and not taken for the default
/// session's, whose errors would then point the wrong way).
struct SectionReader {
    /// The section of the lines read now; nil before the first header.
    private(set) var current: ConfigSection?
    /// Whether a key line followed the current header.
    private var hasKeyLine = true
    /// Where each name's section started.
    private var firstPlace: [String: String] = [:]

    struct Header {
        /// The section that ended at this header without a single key line.
        var endedEmpty: ConfigSection?
        var error: ConfigurationError?
    }

    /// NAME: what a section name may be (it names environment variables and metric labels too).
    static func isValidName<Name: StringProtocol>(_ name: Name) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    /// A key line (or a line that failed as one) of the current section.
    mutating func noteKeyLine() {
        self.hasKeyLine = true
    }

    /// The section read last, when it had no key line.
    func finish() -> ConfigSection? {
        self.hasKeyLine ? nil : self.current
    }

    /// The header on `rawLine`; nil when it is not one (it does not start with `[`).
    mutating func read(_ rawLine: Substring, place: String) -> Header? {
        let line = ConfigFileParser.trimmed(rawLine)
        guard line.hasPrefix("[") else { return nil }
        let endedEmpty = self.finish()
        let inner = line.hasSuffix("]") ? line.dropFirst().dropLast() : line.dropFirst()
        let words = inner.split(whitespaces: ())
        var name = String(inner.filter { !$0.isWhitespace })
        var message: String?
        if words.count >= 2 && words[0] == "session" && line.hasSuffix("]") {
            name = words.dropFirst().joined(separator: " ")
            if !Self.isValidName(name) {
                message =
                    "invalid session name '\(ConfigFileParser.preview(name))' (expected letters, digits, '-' and '_')"
            } else if name == "default" {
                message =
                    "'default' is the session of the keys outside any section: give this one another name"
            } else if let first = self.firstPlace[name] {
                message = "[session \(name)] given twice, on \(first) and \(place) (keep one)"
            }
        } else if words.count == 1 && words[0] == "session" {
            message = "a section needs a name: [session NAME] (letters, digits, '-' and '_')"
        } else {
            let shown = ConfigFileParser.preview(line)
            if let meant = Self.meantName(words) {
                name = meant
                message = "unknown section '\(shown)': did you mean '[session \(meant)]'?"
            } else {
                message = "unknown section '\(shown)' (expected '[session NAME]')"
            }
        }
        let section = ConfigSection(name: name, place: self.firstPlace[name] ?? place)
        self.firstPlace[name] = section.place
        self.current = section
        self.hasKeyLine = false
        return Header(
            endedEmpty: endedEmpty,
            error: message.map { ConfigurationError(place: place, key: nil, message: $0) }
        )
    }

    /// The name of `[github]`, `[sesion github]`, `[Session github]`: a section header mistyped.
    private static func meantName(_ words: [Substring]) -> String? {
        switch words.count {
        case 1 where Self.isValidName(words[0]) && words[0].lowercased() != "session":
            return String(words[0])
        case 2 where Self.isValidName(words[1]) && editDistance(words[0].lowercased(), "session") <= 3:
            return String(words[1])
        default:
            return nil
        }
    }
}

extension Substring {
    /// Split on runs of blanks.
    fileprivate func split(whitespaces: ()) -> [Substring] {
        self.split(whereSeparator: { $0 == " " || $0 == "\t" })
    }
}
