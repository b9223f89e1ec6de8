import BearerCore

/// One `key = value` setting and where it came from.
package struct ConfigEntry: Equatable, Sendable {
    package var key: String
    package var value: String
    /// `file:line` or `command line (--flag)`.
    package var place: String
    /// The `${NAME}`s the value was expanded from, in order: `bearer-proxy run` keeps those of
    /// secret keys out of the wrapped program's environment.
    package var variables: [String] = []
    /// The `${NAME}`s left as written because they are not set, in a key whose unset variables are
    /// no error (`ConfigurationLoader.SecretUse.unused`): the value is not the one meant.
    package var unsetVariables: [String] = []
    /// The `[session NAME]` the line is under; nil outside any section (the default session, and
    /// the process-wide keys).
    package var section: ConfigSection?

    package init(
        key: String,
        value: String,
        place: String,
        variables: [String] = [],
        section: ConfigSection? = nil
    ) {
        self.key = key
        self.value = value
        self.place = place
        self.variables = variables
        self.section = section
    }
}

/// A `[session NAME]` line: the session's name, and where its section starts.
package struct ConfigSection: Hashable, Sendable {
    package var name: String
    /// `file:line` of the `[session NAME]` line.
    package var place: String

    package init(name: String, place: String) {
        self.name = name
        self.place = place
    }
}

/// Reads the config file format: `key = value` lines, `#` comment lines, `${VAR}` expansion.
///
/// `#` starts a comment only at the start of a line (after blanks), so a value may contain `#`
/// (passwords do). A blank before a `#` in a value is refused, though: it is almost always a comment
/// written after the value, which would otherwise become part of it (and fail far from its cause, or
/// not at all). A value may be wrapped in double quotes to keep leading or trailing blanks, or a ` #`.
/// A key given twice is an error naming both lines: silently letting the last one win hides edits.
///
/// A `[session NAME]` line starts a named session (docs/sessions.md, "Several APIs in one proxy"): the lines up
/// to the next such line are its keys (`ConfigEntry.section`); the lines before the first are the
/// default session's and the process-wide ones. A key may be given once per section.
package enum ConfigFileParser {
    /// The first mistake, thrown (for callers that stop at one).
    package static func parse(
        _ text: String,
        fileName: String,
        environment: [String: String]
    ) throws(ConfigurationError) -> [ConfigEntry] {
        var diagnostics = ConfigurationDiagnostics()
        let entries = Self.parse(text, fileName: fileName, environment: environment, into: &diagnostics)
        try diagnostics.throwFirstError()
        return entries
    }

    /// Every line's mistake is recorded and the line skipped, so that one run names them all. An
    /// unset variable is an error, except in the keys of `unsetAllowedIn`, where it is left as written
    /// (`ConfigEntry.unsetVariables`).
    package static func parse(
        _ text: String,
        fileName: String,
        environment: [String: String],
        unsetAllowedIn lenientKeys: Set<String> = [],
        into diagnostics: inout ConfigurationDiagnostics
    ) -> [ConfigEntry] {
        var entries: [ConfigEntry] = []
        /// Where each key was first given, by section ("" outside any).
        var firstPlace: [String: [String: String]] = [:]
        var sections = SectionReader()
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let place = "\(fileName):\(offset + 1)"
            do throws(ConfigurationError) {
                if let header = sections.read(rawLine, place: place) {
                    if let empty = header.endedEmpty { diagnostics.lineError(Self.emptySection(empty)) }
                    if let error = header.error { diagnostics.lineError(error) }
                    continue
                }
                guard
                    var entry = try Self.parseLine(
                        rawLine,
                        place: place,
                        environment: environment,
                        unsetAllowedIn: lenientKeys
                    )
                else { continue }
                entry.section = sections.current
                sections.noteKeyLine()
                let scope = entry.section?.name ?? ""
                if let first = firstPlace[scope]?[entry.key] {
                    throw ConfigurationError(
                        place: place,
                        key: entry.key,
                        message: "given twice, on \(first) and \(place) (keep one)"
                    )
                }
                firstPlace[scope, default: [:]][entry.key] = place
                entries.append(entry)
            } catch {
                sections.noteKeyLine()
                diagnostics.lineError(error)
            }
        }
        if let empty = sections.finish() { diagnostics.lineError(Self.emptySection(empty)) }
        return entries
    }

    /// A `[session NAME]` line with no key line after it before the next section or the end.
    private static func emptySection(_ section: ConfigSection) -> ConfigurationError {
        ConfigurationError(
            place: section.place,
            key: nil,
            message: "[session \(section.name)] has no keys (give it upstream with listen or mount, or inject_hosts)"
        )
    }

    /// One line: nil for a blank or comment line.
    private static func parseLine(
        _ rawLine: Substring,
        place: String,
        environment: [String: String],
        unsetAllowedIn lenientKeys: Set<String>
    ) throws(ConfigurationError) -> ConfigEntry? {
        let line = Self.trimmed(rawLine)
        if line.isEmpty || line.hasPrefix("#") { return nil }
        guard let equals = line.firstIndex(of: "=") else {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            // `session github`: a section header without its brackets.
            let header =
                words.count == 2 && words[0].lowercased() == "session" && SectionReader.isValidName(words[1])
                ? " (did you mean '[session \(words[1])]'?)" : ""
            throw ConfigurationError(
                place: place,
                key: nil,
                message: "expected 'key = value' (the line is not shown: it may hold a secret)\(header)"
            )
        }
        let key = line[..<equals].trimmingBlanks()
        guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw ConfigurationError(
                place: place,
                key: nil,
                message: "invalid key '\(Self.preview(key))' (keys are lower_case_with_underscores)"
            )
        }
        var value = line[line.index(after: equals)...].trimmingBlanks()
        if value.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\"") {
            value = String(value.dropFirst().dropLast())
        } else if Self.hasTrailingComment(value) {
            throw ConfigurationError(
                place: place,
                key: key,
                message:
                    "'#' after the value: comments must be on their own line (quote the value if the '#' belongs to it)"
            )
        }
        var entry = ConfigEntry(key: key, value: value, place: place)
        try Self.expand(&entry, environment: environment, leavingUnset: lenientKeys.contains(key))
        return entry
    }

    /// Replaces each `${NAME}` in the entry's value with the environment variable's value, adding NAME
    /// to its `variables`; an unset variable is an error, or (`leavingUnset`) left as written and added
    /// to its `unsetVariables`.
    private static func expand(
        _ entry: inout ConfigEntry,
        environment: [String: String],
        leavingUnset: Bool
    ) throws(ConfigurationError) {
        let (place, key, value) = (entry.place, entry.key, entry.value)
        guard value.contains("${") else { return }
        var result = ""
        var rest = Substring(value)
        while let start = rest.firstRange(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw ConfigurationError(place: place, key: key, message: "unterminated '${' (expected ${NAME})")
            }
            let name = String(rest[start.upperBound..<end])
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                throw ConfigurationError(place: place, key: key, message: "invalid variable name in '${\(name)}'")
            }
            if let replacement = environment[name] {
                result += replacement
                entry.variables.append(name)
            } else if leavingUnset {
                result += "${\(name)}"
                entry.unsetVariables.append(name)
            } else {
                throw ConfigurationError(place: place, key: key, message: "environment variable \(name) is not set")
            }
            rest = rest[rest.index(after: end)...]
        }
        result += rest
        entry.value = result
    }

    /// A blank followed by `#`: what a comment after a value looks like.
    private static func hasTrailingComment(_ value: String) -> Bool {
        zip(value, value.dropFirst()).contains { $0.isWhitespace && $1 == "#" }
    }

    /// The line without its surrounding blanks and a Windows line end.
    static func trimmed(_ rawLine: Substring) -> String {
        rawLine.trimmingBlanks(and: ["\r"])
    }

    static func preview(_ text: String) -> String {
        text.count > 40 ? String(text.prefix(40)) + "…" : text
    }
}
