import BearerHTTP
import BearerIO

/// The rules between sessions (docs/sessions.md, "Several APIs in one proxy"): each request has one session,
/// so no two sessions may claim one host, mount or listener; each session keeps its own tokens, so no
/// two may share a fleet key or a refresh token file; and a named session must be reachable.
///
/// Each finding is one line at the later session's line, naming the earlier one's.
extension Configuration {
    func validateSessions(into diagnostics: inout ConfigurationDiagnostics) {
        for session in self.namedSessions { self.validateReach(of: session, into: &diagnostics) }
        for (laterIndex, later) in self.sessions.enumerated() {
            for earlier in self.sessions[..<laterIndex] {
                self.validateOverlap(of: later, with: earlier, into: &diagnostics)
            }
        }
    }

    /// A named session must be reachable: by its upstream (through listen or mount) or its inject hosts.
    private func validateReach(of session: SessionSettings, into diagnostics: inout ConfigurationDiagnostics) {
        // A wrong upstream or inject_hosts line was reported at that line; "reaches no API" would repeat it.
        let followsFromAFailedLine = diagnostics.hasFailedLine(of: [.upstream, .injectHosts], in: session.name)
        if session.upstream == nil && !followsFromAFailedLine {
            for key in [Key.mount, .listen] {
                guard let place = self.provenance.place(of: key, in: session.name) else { continue }
                diagnostics.error(
                    at: place,
                    key,
                    "needs \(Key.upstream) in [session \(session.name)] (where the requests it takes go)"
                )
            }
            if session.injectHosts == nil {
                diagnostics.error(
                    at: self.sectionPlace(of: session),
                    nil,
                    "[session \(session.name)] reaches no API: set \(Key.upstream) (with \(Key.listen) or \(Key.mount)) or \(Key.injectHosts)"
                )
            }
        }
    }

    private func validateOverlap(
        of b: SessionSettings,
        with a: SessionSettings,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        let whose = "session \(a.name)"
        if let (mine, theirs) = Self.firstOverlap(b.effectiveInjectHosts, a.effectiveInjectHosts) {
            let key = b.injectHosts == nil ? Key.upstream : .injectHosts
            let other = a.injectHosts == nil ? Key.upstream : .injectHosts
            diagnostics.error(
                at: self.place(of: key, in: b),
                .injectHosts,
                "\(mine) overlaps \(theirs) of \(whose) (\(self.place(of: other, in: a))): a host gets one session's token, so each inject host belongs to one session"
            )
        }
        if let mount = b.mount, mount == a.mount {
            diagnostics.error(
                at: self.place(of: .mount, in: b),
                .mount,
                "\(mount) is also the \(Key.mount) of \(whose) (\(self.place(of: .mount, in: a))): one path, one session"
            )
        }
        if let address = b.listen.first(where: { spec in spec.isFixed && a.listen.contains(spec) }) {
            diagnostics.error(
                at: self.place(of: .listen, in: b),
                .listen,
                "\(address) is also the \(Key.listen) of \(whose) (\(self.place(of: .listen, in: a))): each listener belongs to one session"
            )
        }
        if self.process.sessionStore.endpoint != nil && b.sessionName == a.sessionName {
            diagnostics.error(
                at: self.place(of: .sessionName, in: b),
                .sessionName,
                "'\(b.sessionName)' is also the \(Key.sessionName) of \(whose) (\(self.place(of: .sessionName, in: a))): sessions with one fleet key would share one token (set \(Key.sessionName) in one of them)"
            )
        }
        let variable = Self.urlVariable(of: b.name)
        if a.name != Self.defaultSessionName, variable == Self.urlVariable(of: a.name),
            a.mount != nil || !a.listen.isEmpty, b.mount != nil || !b.listen.isEmpty
        {
            diagnostics.error(
                at: self.sectionPlace(of: b),
                nil,
                "[session \(b.name)] and [session \(a.name)] (\(self.sectionPlace(of: a))) would both export \(variable) (bearer-proxy env and run): rename one"
            )
        }
        if let file = b.refreshTokenFile, file == a.refreshTokenFile {
            diagnostics.error(
                at: self.place(of: .refreshTokenFile, in: b),
                .refreshTokenFile,
                "\(file) is also the \(Key.refreshTokenFile) of \(whose) (\(self.place(of: .refreshTokenFile, in: a))): each session keeps its own refresh token"
            )
        }
    }

    /// Where `key` was set in `session`: its line; else a named session's `[session NAME]` line (its
    /// defaults follow from its name), or for the default session the key's default.
    func place(of key: ConfigurationKey, in session: SessionSettings) -> String {
        if let place = self.provenance.place(of: key, in: session.name) { return place }
        return session.name == Self.defaultSessionName ? "\(key)'s default" : self.sectionPlace(of: session)
    }

    /// A named session's `[session NAME]` line; the file for the default session.
    func sectionPlace(of session: SessionSettings) -> String {
        self.places(of: session.name).whole
    }

    /// `BEARER_PROXY_URL_<NAME>`: the name upper-cased, `-` as `_` (what `bearer-proxy env` and
    /// `run` export for a named session, so two names must not make one variable).
    package static func urlVariable(of session: String) -> String {
        "BEARER_PROXY_URL_" + session.uppercased().replacing("-", with: "_")
    }

    /// The first pattern of `mine` that can match a host one of `theirs` matches.
    private static func firstOverlap(_ mine: [HostPattern], _ theirs: [HostPattern]) -> (HostPattern, HostPattern)? {
        for pattern in mine {
            if let other = theirs.first(where: pattern.overlaps) { return (pattern, other) }
        }
        return nil
    }
}

extension HostPattern {
    /// Whether some host and port match both patterns: the same host (on a port both allow), or a
    /// host under a `*.domain` the other names or covers.
    func overlaps(_ other: HostPattern) -> Bool {
        switch (self, other) {
        case (.host(let a), .host(let b)), (.host(let a), .hostAndPort(let b, _)),
            (.hostAndPort(let a, _), .host(let b)):
            return a == b
        case (.hostAndPort(let a, let portA), .hostAndPort(let b, let portB)):
            return a == b && portA == portB
        case (.subdomains(let domain), .host(let host)), (.subdomains(let domain), .hostAndPort(let host, _)),
            (.host(let host), .subdomains(let domain)), (.hostAndPort(let host, _), .subdomains(let domain)):
            return host.hasSuffix("." + domain)
        case (.subdomains(let a), .subdomains(let b)):
            return a == b || a.hasSuffix("." + b) || b.hasSuffix("." + a)
        }
    }
}

extension ListenAddressSpec {
    /// Names one socket: a unix path, or a port other than 0 (which picks any free one at each bind).
    var isFixed: Bool {
        if case .hostPort(_, 0) = self { return false }
        return true
    }
}
