import Foundation

/// One `key = value` setting and where it came from.
package struct ConfigEntry: Equatable, Sendable {
    package var key: String
    package var value: String
    /// `file:line` or `command line (--flag)`.
    package var place: String
    /// The `${NAME}`s the value was expanded from, in order: `bearer-proxy run` keeps those of
    /// secret keys out of the wrapped program's environment.
    package var variables: [String] = []

    package init(key: String, value: String, place: String, variables: [String] = []) {
        self.key = key
        self.value = value
        self.place = place
        self.variables = variables
    }
}

/// Reads the config file format: `key = value` lines, `#` comment lines, `${VAR}` expansion.
///
/// `#` starts a comment only at the start of a line (after blanks), so a value may contain `#`
/// (passwords do). A blank before a `#` in a value is refused, though: it is almost always a comment
/// written after the value, which would otherwise become part of it (and fail far from its cause, or
/// not at all). A value may be wrapped in double quotes to keep leading or trailing blanks, or a ` #`.
/// A key given twice is an error naming both lines: silently letting the last one win hides edits.
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

    /// Every line's mistake is recorded and the line skipped, so that one run names them all.
    package static func parse(
        _ text: String,
        fileName: String,
        environment: [String: String],
        into diagnostics: inout ConfigurationDiagnostics
    ) -> [ConfigEntry] {
        var entries: [ConfigEntry] = []
        var firstPlace: [String: String] = [:]
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let place = "\(fileName):\(offset + 1)"
            do throws(ConfigurationError) {
                guard let entry = try Self.parseLine(rawLine, place: place, environment: environment) else { continue }
                if let first = firstPlace[entry.key] {
                    throw ConfigurationError(
                        place: place,
                        key: entry.key,
                        message: "given twice, on \(first) and \(place) (keep one)"
                    )
                }
                firstPlace[entry.key] = place
                entries.append(entry)
            } catch {
                diagnostics.lineError(error)
            }
        }
        return entries
    }

    /// One line: nil for a blank or comment line.
    private static func parseLine(
        _ rawLine: Substring,
        place: String,
        environment: [String: String]
    ) throws(ConfigurationError) -> ConfigEntry? {
        let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
        if line.isEmpty || line.hasPrefix("#") { return nil }
        guard let equals = line.firstIndex(of: "=") else {
            throw ConfigurationError(
                place: place,
                key: nil,
                message: "expected 'key = value' (the line is not shown: it may hold a secret)"
            )
        }
        let key = line[..<equals].trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw ConfigurationError(
                place: place,
                key: nil,
                message: "invalid key '\(Self.preview(key))' (keys are lower_case_with_underscores)"
            )
        }
        var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
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
        var variables: [String] = []
        let expanded = try Self.expand(value, place: place, key: key, environment: environment, naming: &variables)
        return ConfigEntry(key: key, value: expanded, place: place, variables: variables)
    }

    /// Replaces each `${NAME}` with the environment variable's value, adding NAME to `names`; an unset
    /// variable is an error.
    static func expand(
        _ value: String,
        place: String,
        key: String,
        environment: [String: String],
        naming names: inout [String]
    ) throws(ConfigurationError) -> String {
        guard value.contains("${") else { return value }
        var result = ""
        var rest = Substring(value)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw ConfigurationError(place: place, key: key, message: "unterminated '${' (expected ${NAME})")
            }
            let name = String(rest[start.upperBound..<end])
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                throw ConfigurationError(place: place, key: key, message: "invalid variable name in '${\(name)}'")
            }
            guard let replacement = environment[name] else {
                throw ConfigurationError(place: place, key: key, message: "environment variable \(name) is not set")
            }
            result += replacement
            names.append(name)
            rest = rest[rest.index(after: end)...]
        }
        result += rest
        return result
    }

    /// A blank followed by `#`: what a comment after a value looks like.
    private static func hasTrailingComment(_ value: String) -> Bool {
        zip(value, value.dropFirst()).contains { $0.isWhitespace && $1 == "#" }
    }

    private static func preview(_ text: String) -> String {
        text.count > 40 ? String(text.prefix(40)) + "…" : text
    }
}
