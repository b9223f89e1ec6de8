/// Where each setting of a configuration came from, kept beside its values: what a finding (an
/// error of `--check`, a warning at start, a failed start) names, `io`'s fallback warns about only
/// when `io` was set, and `bearer-proxy run` keeps from its child.
package struct Provenance: Equatable, Sendable {
    /// The config file; nil when the settings came from flags alone.
    package var file: String?
    /// Where each process-wide key was set (`proxy.conf:12`, `command line (--listen)`), by name.
    package var processKeys: [String: String] = [:]
    /// Each session's, by its name.
    package var sessions: [String: SessionProvenance] = [:]
    /// The environment variables expanded (`${VAR}`) into keys that hold secrets: `bearer-proxy run`
    /// removes them from the wrapped program's environment (docs/wrapping.md, "Wrapping a program").
    package var secretVariables: Set<String> = []

    package init(file: String? = nil) {
        self.file = file
    }

    /// Where `key` was set for the session called `session`: one of its lines, else, for a
    /// process-wide key, the file's.
    package func place(of key: ConfigurationKey, in session: String) -> String? {
        switch key.scope {
        case .process: self.processKeys[key.name]
        case .session, .namedSession: self.sessions[session]?.keys[key.name]
        }
    }

    /// Records that `key` was set at `place` for the session called `session`.
    package mutating func record(_ key: ConfigurationKey, at place: String, in session: String) {
        switch key.scope {
        case .process: self.processKeys[key.name] = place
        case .session, .namedSession: self.sessions[session, default: SessionProvenance()].keys[key.name] = place
        }
    }

    /// What the rules about `session`'s settings place their findings with: its keys' lines and the
    /// process's, and its `[session NAME]` line (the file for the default session) for the rest.
    package func places(of session: String) -> SettingPlaces {
        let own = self.sessions[session]
        return SettingPlaces(
            byKey: self.processKeys.merging(own?.keys ?? [:]) { _, session in session },
            file: own?.section ?? self.file
        )
    }
}

/// Where one session's keys were set.
package struct SessionProvenance: Equatable, Sendable {
    /// `file:line` of its `[session NAME]` line; nil for the default session.
    package var section: String?
    package var keys: [String: String] = [:]

    package init(section: String? = nil) {
        self.section = section
    }
}

/// Where each key a session's rules read was set (`proxy.conf:12`, `command line (--upstream)`), so
/// that a rule checked once every key is read still names a line (`Provenance.places(of:)`).
package struct SettingPlaces: Equatable, Sendable {
    package var byKey: [String: String] = [:]
    /// The config file (a named session's `[session NAME]` line), for findings about no key in particular.
    package var file: String?

    package init(byKey: [String: String] = [:], file: String? = nil) {
        self.byKey = byKey
        self.file = file
    }

    /// Where `key` was set.
    package subscript(_ key: ConfigurationKey) -> String? { self.byKey[key.name] }

    /// Where a finding about the whole configuration is placed.
    package var whole: String { self.file ?? "configuration" }
}
