/// Everything the configuration's checks found, collected so that one run (`--check`, or a start
/// that fails) names every mistake of the file at once, one line each, in file order.
///
/// A check never throws: it records, and the next check runs. To add a check:
/// - a value's own grammar goes in its key's `apply` in the key table (`ConfigurationKeys.swift`),
///   returning what was expected; `Configuration.build(from:into:)` records it at the key's line;
/// - a rule about settings together goes in a `func validate…(into diagnostics: inout
///   ConfigurationDiagnostics)` on `SessionSettings` (given the `ProcessSettings` when it reads
///   them), called from `SessionSettings.validate(process:isUnusedDefault:into:)`; it records with
///   `diagnostics.error(_:_:)` (the proxy does not start) or `diagnostics.warning(_:_:)` (it starts;
///   `--check` prints the line and start-up logs it at warn). Give the key the line belongs to (a
///   constant of the key table, `.tokenURL`); the place is looked up from where that key was set
///   (`alsoAt:` names keys to try next when it was not), else the file.
///
/// Name in the message every key the rule reads (interpolated from the table: `\(Key.tokenURL)`): a finding that names a key whose own line was
/// wrong is dropped, because it follows from that line (a mistyped token_url must not also be
/// reported as "needs token_url").
///
/// With `[session NAME]` sections the rules run once per session (`Configuration.forEverySession`),
/// each with that session's places and failed lines; a named session's findings about a process-wide
/// key are dropped, since the same rule on the default session reports them once.
package struct ConfigurationDiagnostics: Sendable {
    package private(set) var errors: [ConfigurationError] = []
    package private(set) var warnings: [ConfigurationWarning] = []
    /// Keys whose own line had an error, by section (nil: outside any): findings that name them are
    /// consequences, not news.
    private var failedKeys: [String?: Set<String>] = [:]
    /// Where the rules' findings are placed: set once every key is read.
    var places: SettingPlaces
    /// The named session whose rules run now; nil for the default session's (and the whole file's).
    private(set) var section: String?

    package init(places: SettingPlaces = SettingPlaces()) {
        self.places = places
    }

    /// A line's own mistake (its syntax, or its value), at that line. `meant` is the key an unknown
    /// one probably stands for: findings about it are consequences too.
    /// `section`: the `[session NAME]` the line is in (nil: outside any).
    mutating func lineError(_ error: ConfigurationError, meant: String? = nil, section: String? = nil) {
        for key in [error.key, meant].compactMap(\.self) { self.failedKeys[section, default: []].insert(key) }
        self.errors.append(error)
    }

    /// A rule about settings together that the configuration breaks: the proxy does not start.
    mutating func error(_ key: ConfigurationKey?, _ message: String, alsoAt others: [ConfigurationKey] = []) {
        guard !self.followsFromAFailedLine(key?.name, message), !self.isTheDefaultSessionsToReport(key) else {
            return
        }
        self.errors.append(ConfigurationError(place: self.place(key, others), key: key?.name, message: message))
    }

    /// A rule about several settings' lines (two sessions', say): placed where it says, reported as is.
    mutating func error(at place: String, _ key: ConfigurationKey?, _ message: String) {
        self.errors.append(ConfigurationError(place: place, key: key?.name, message: message))
    }

    /// Whether one of `keys` had a line of its own that was wrong in `section` (nil: outside any):
    /// for a rule placed with `error(at:_:_:)` whose finding would follow from that line.
    func hasFailedLine(of keys: [ConfigurationKey], in section: String?) -> Bool {
        !(self.failedKeys[section] ?? []).isDisjoint(with: keys.map(\.name))
    }

    /// A setting that works, but surely not as meant (or not safely): the proxy starts, and says so.
    mutating func warning(_ key: ConfigurationKey?, _ message: String, alsoAt others: [ConfigurationKey] = []) {
        guard !self.followsFromAFailedLine(key?.name, message), !self.isTheDefaultSessionsToReport(key) else {
            return
        }
        self.warnings.append(ConfigurationWarning(place: self.place(key, others), key: key?.name, message: message))
    }

    /// The rules that follow run for `section`'s session (nil: the default one), placed at `places`.
    mutating func enter(section: String?, places: SettingPlaces) {
        self.section = section
        self.places = places
    }

    /// The errors in file order (then the flags' and the file-wide ones), each once.
    package var sortedErrors: [ConfigurationError] {
        Self.inFileOrder(self.errors)
    }

    package var sortedWarnings: [ConfigurationWarning] {
        Self.inFileOrder(self.warnings)
    }

    /// The first error, thrown: for callers that stop at one (the tests of a single rule).
    func throwFirstError() throws(ConfigurationError) {
        if let first = self.sortedErrors.first { throw first }
    }

    private func place(_ key: ConfigurationKey?, _ others: [ConfigurationKey]) -> String {
        for candidate in (key.map { [$0] } ?? []) + others {
            if let place = self.places[candidate] { return place }
        }
        return self.places.whole
    }

    private func followsFromAFailedLine(_ key: String?, _ message: String) -> Bool {
        var failed = self.failedKeys[self.section] ?? []
        if self.section != nil {
            // The file's process-wide lines are every session's.
            failed.formUnion((self.failedKeys[nil] ?? []).filter(Configuration.isProcessWide))
        }
        if let key, failed.contains(key) { return true }
        let words = Set(message.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
        return !failed.isDisjoint(with: words)
    }

    /// A named session's finding about a process-wide key: the default session's rules find it too.
    private func isTheDefaultSessionsToReport(_ key: ConfigurationKey?) -> Bool {
        guard self.section != nil, let key else { return false }
        return key.scope == .process
    }

    /// Stable: findings on one line keep the order the checks made them in.
    private static func inFileOrder<Finding: ConfigurationFinding>(_ findings: [Finding]) -> [Finding] {
        findings.enumerated().sorted { a, b in
            let (lineA, lineB) = (a.element.line ?? Int.max, b.element.line ?? Int.max)
            return lineA != lineB ? lineA < lineB : a.offset < b.offset
        }.map(\.element)
    }
}

/// A finding about one setting, said as `proxy.conf:12: key: what is wrong and what to do`.
package protocol ConfigurationFinding: CustomStringConvertible {
    /// `proxy.conf:12`, `command line (--listen)`, or a file name alone.
    var place: String { get }
    var key: String? { get }
    var message: String { get }
}

extension ConfigurationFinding {
    package var description: String {
        if let key { return "\(self.place): \(key): \(self.message)" }
        return "\(self.place): \(self.message)"
    }

    /// The line number of a `file:line` place.
    var line: Int? {
        guard let colon = self.place.lastIndex(of: ":") else { return nil }
        return Int(self.place[self.place.index(after: colon)...])
    }
}

/// A setting that works but surely not as meant, or not safely: `--check` prints it after the
/// configuration, and start-up logs it at warn.
package struct ConfigurationWarning: ConfigurationFinding, Equatable, Sendable {
    package var place: String
    package var key: String?
    package var message: String
}

/// Every error of a configuration, each on its own line: what a failed start or `--check` prints.
package struct ConfigurationErrors: Error, Equatable, Sendable, CustomStringConvertible {
    package var errors: [ConfigurationError]

    package init(_ errors: [ConfigurationError]) {
        self.errors = errors
    }

    package var description: String {
        self.errors.map(\.description).joined(separator: "\n")
    }
}
