/// Making a configuration from entries (the file's lines, then the flags'): each applied through its
/// key in the table, to the process's settings or to its session's, and its place recorded.
extension Configuration {
    /// Applies settings in order (file first, then flags), so later ones win; throws the first mistake.
    package static func build(from entries: [ConfigEntry]) throws(ConfigurationError) -> Configuration {
        var diagnostics = ConfigurationDiagnostics()
        let config = Self.build(from: entries, into: &diagnostics)
        try diagnostics.throwFirstError()
        return config
    }

    /// Applies settings in order (file first, then flags), so later ones win. A line with an unknown
    /// key, a bad value or a key that does not belong where it is is recorded and leaves its setting
    /// at the default.
    ///
    /// The lines outside any section set the process's keys and the default session's. Each `[session
    /// NAME]` makes one more session, from a named session's defaults and its section's lines.
    package static func build(
        from entries: [ConfigEntry],
        into diagnostics: inout ConfigurationDiagnostics
    ) -> Configuration {
        var config = Configuration()
        config.apply(entries.filter { $0.section == nil }, to: 0, into: &diagnostics)
        var sections: [ConfigSection] = []
        for case let section? in entries.map(\.section) where !sections.contains(section) {
            sections.append(section)
        }
        for section in sections {
            config.sessions.append(SessionSettings(name: section.name))
            // `[session default]` is an error of its line, and leaves the default session's places alone.
            if section.name != Self.defaultSessionName {
                config.provenance.sessions[section.name] = SessionProvenance(section: section.place)
            }
            config.apply(
                entries.filter { $0.section == section },
                to: config.sessions.count - 1,
                section: section,
                into: &diagnostics
            )
        }
        return config
    }

    /// `entries` applied, each of them in `section` (nil: outside any), a session key's to
    /// `sessions[index]`.
    private mutating func apply(
        _ entries: [ConfigEntry],
        to index: Int,
        section: ConfigSection? = nil,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        for entry in entries {
            guard let key = Self.key(named: entry.key) else {
                let meant = closestName(to: entry.key, among: Self.keys.map(\.name))
                let suggestion = meant.map { " (did you mean '\($0)'?)" } ?? ""
                diagnostics.lineError(
                    ConfigurationError(place: entry.place, key: entry.key, message: "unknown key\(suggestion)"),
                    meant: meant,
                    section: section?.name
                )
                continue
            }
            let misplaced = Self.misplacement(of: key, in: section)
            guard let expected = misplaced ?? key.apply(entry.value, to: &self.process, &self.sessions[index]) else {
                self.provenance.record(key, at: entry.place, in: self.sessions[index].name)
                if key.carriesSecrets { self.provenance.secretVariables.formUnion(entry.variables) }
                continue
            }
            // A value holding an unset `${VAR}` is not the value meant, so whatever its key refuses in it
            // is no error: the key stays unset (`ConfigurationLoader.SecretUse.unused`).
            if misplaced == nil && !entry.unsetVariables.isEmpty { continue }
            diagnostics.lineError(
                ConfigurationError(place: entry.place, key: entry.key, message: expected),
                section: section?.name
            )
        }
    }

    /// Why the line of `key` cannot be where it is (outside any section: `section` nil), if it cannot.
    static func misplacement(of key: ConfigurationKey, in section: ConfigSection?) -> String? {
        switch (key.scope, section) {
        case (.process, .some):
            "is process-wide: set it outside any section, above the first [session …] line"
        case (.namedSession, .none):
            "belongs in a [session NAME] section (the keys outside any section are the default session, which takes the paths no mount matches)"
        case (.process, .none), (.session, _), (.namedSession, .some):
            nil
        }
    }

    /// Whether `name` is a process-wide key (unknown names are not).
    static func isProcessWide(_ name: String) -> Bool {
        Self.key(named: name)?.scope == .process
    }
}
