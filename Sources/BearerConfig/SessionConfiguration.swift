import BearerHTTP

/// One `[session NAME]` of the config file: its name, its place, and its settings (README, "Several
/// APIs in one proxy").
///
/// `configuration` is a whole `Configuration`, so that everything written against one (token
/// sources, login and logout, the rules about settings together, `--check`) serves a named session
/// as it serves the default one: its session keys are its section's, its process-wide keys the
/// file's (the same values as the default session's, which is the root configuration itself).
package struct SessionConfiguration: Sendable {
    package var name: String
    /// `file:line` of its `[session NAME]` line.
    package var place: String
    package var configuration: Configuration

    package init(name: String, place: String, configuration: Configuration) {
        self.name = name
        self.place = place
        self.configuration = configuration
    }
}

extension Configuration {
    /// The name of the session of the keys outside any section.
    package static let defaultSessionName = "default"

    /// Whether the keys outside any section make a session the user sees: one with an upstream (the
    /// main listener's paths no mount takes) or inject_hosts. A file without sections always has one
    /// (it needs an upstream); beside named sessions the default one may reach no API, and then it
    /// takes no request, and `/status`, `/metrics`, admin refresh and logout and the start line do
    /// not speak of it.
    package var hasDefaultSession: Bool { self.upstream != nil || self.injectHosts != nil }

    /// Every session: the default one (this configuration) first, then the named ones in file order.
    package var everySession: [SessionConfiguration] {
        [SessionConfiguration(name: Self.defaultSessionName, place: self.settingPlaces.whole, configuration: self)]
            + self.sessions
    }

    /// Every session's inject hosts: what the local CA's name constraints permit, and what
    /// NO_PROXY must not bypass.
    package var everyInjectHost: [HostPattern] {
        self.everySession.flatMap(\.configuration.effectiveInjectHosts)
    }

    /// The session called `name` (`default`: this configuration).
    package func session(named name: String) -> Configuration? {
        if name == Self.defaultSessionName { return self }
        return self.sessions.first { $0.name == name }?.configuration
    }

    /// What a named session starts from, before the file's lines: the defaults, except that it has
    /// no listener of its own unless it says so, and its fleet key is its name.
    static func namedSessionDefaults(_ name: String) -> Configuration {
        var configuration = Configuration()
        configuration.listen = []
        configuration.sessionStore.name = name
        configuration.dpop.sectionName = name
        return configuration
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
        Self.keys.first { $0.name == name }?.scope == .process
    }

    /// Runs `body` on each session's configuration in turn, the default session's (this one) first,
    /// with `diagnostics` placing findings at that session's lines.
    mutating func forEverySession(
        _ diagnostics: inout ConfigurationDiagnostics,
        _ body: (inout Configuration, inout ConfigurationDiagnostics) -> Void
    ) {
        diagnostics.enter(section: nil, places: self.settingPlaces)
        body(&self, &diagnostics)
        for index in self.sessions.indices {
            diagnostics.enter(
                section: self.sessions[index].name,
                places: self.sessions[index].configuration.settingPlaces
            )
            body(&self.sessions[index].configuration, &diagnostics)
        }
        diagnostics.enter(section: nil, places: self.settingPlaces)
    }
}
