import BearerHTTP
import BearerIO
import Foundation

/// The rules between sessions (README, "Several APIs in one proxy"): each request has one session,
/// so no two sessions may claim one host, mount or listener; each session keeps its own tokens, so no
/// two may share a fleet key or a refresh token file; and a named session must be reachable.
///
/// Each finding is one line at the later session's line, naming the earlier one's.
extension Configuration {
    func validateSessions(into diagnostics: inout ConfigurationDiagnostics) {
        let sessions = self.everySession
        for session in sessions.dropFirst() { Self.validateReach(of: session, into: &diagnostics) }
        for (laterIndex, later) in sessions.enumerated() {
            for earlier in sessions[..<laterIndex] {
                Self.validateOverlap(of: later, with: earlier, into: &diagnostics)
            }
        }
    }

    /// A named session must be reachable: by its upstream (through listen or mount) or its inject hosts.
    private static func validateReach(
        of session: SessionConfiguration,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        let configuration = session.configuration
        let places = configuration.settingPlaces.byKey
        // A wrong upstream or inject_hosts line was reported at that line; "reaches no API" would repeat it.
        let followsFromAFailedLine = diagnostics.hasFailedLine(of: ["upstream", "inject_hosts"], in: session.name)
        if configuration.upstream == nil && !followsFromAFailedLine {
            for key in ["mount", "listen"] {
                guard let place = places[key] else { continue }
                diagnostics.error(
                    at: place,
                    key,
                    "needs upstream in [session \(session.name)] (where the requests it takes go)"
                )
            }
            if configuration.injectHosts == nil {
                diagnostics.error(
                    at: session.place,
                    nil,
                    "[session \(session.name)] reaches no API: set upstream (with listen or mount) or inject_hosts"
                )
            }
        }
    }

    private static func validateOverlap(
        of later: SessionConfiguration,
        with earlier: SessionConfiguration,
        into diagnostics: inout ConfigurationDiagnostics
    ) {
        let (a, b) = (earlier.configuration, later.configuration)
        let whose = "session \(earlier.name)"
        if let (mine, theirs) = Self.firstOverlap(b.effectiveInjectHosts, a.effectiveInjectHosts) {
            let key = b.injectHosts == nil ? "upstream" : "inject_hosts"
            let other = a.injectHosts == nil ? "upstream" : "inject_hosts"
            diagnostics.error(
                at: Self.place(of: key, in: later),
                "inject_hosts",
                "\(mine) overlaps \(theirs) of \(whose) (\(Self.place(of: other, in: earlier))): a host gets one session's token, so each inject host belongs to one session"
            )
        }
        if let mount = b.mount, mount == a.mount {
            diagnostics.error(
                at: Self.place(of: "mount", in: later),
                "mount",
                "\(mount) is also the mount of \(whose) (\(Self.place(of: "mount", in: earlier))): one path, one session"
            )
        }
        if let address = b.listen.first(where: { spec in spec.isFixed && a.listen.contains(spec) }) {
            diagnostics.error(
                at: Self.place(of: "listen", in: later),
                "listen",
                "\(address) is also the listen of \(whose) (\(Self.place(of: "listen", in: earlier))): each listener belongs to one session"
            )
        }
        if b.sessionStore.endpoint != nil && b.sessionStore.name == a.sessionStore.name {
            diagnostics.error(
                at: Self.place(of: "session_name", in: later),
                "session_name",
                "'\(b.sessionStore.name)' is also the session_name of \(whose) (\(Self.place(of: "session_name", in: earlier))): sessions with one fleet key would share one token (set session_name in one of them)"
            )
        }
        let variable = Self.urlVariable(of: later.name)
        if earlier.name != Self.defaultSessionName, variable == Self.urlVariable(of: earlier.name),
            a.mount != nil || !a.listen.isEmpty, b.mount != nil || !b.listen.isEmpty
        {
            diagnostics.error(
                at: later.place,
                nil,
                "[session \(later.name)] and [session \(earlier.name)] (\(earlier.place)) would both export \(variable) (bearer-proxy env and run): rename one"
            )
        }
        if let file = b.refreshTokenFile, file == a.refreshTokenFile {
            diagnostics.error(
                at: Self.place(of: "refresh_token_file", in: later),
                "refresh_token_file",
                "\(file) is also the refresh_token_file of \(whose) (\(Self.place(of: "refresh_token_file", in: earlier))): each session keeps its own refresh token"
            )
        }
    }

    /// Where `key` was set in `session`: its line; else a named session's `[session NAME]` line (its
    /// defaults follow from its name), or for the default session the key's default.
    static func place(of key: String, in session: SessionConfiguration) -> String {
        if let place = session.configuration.settingPlaces.byKey[key] { return place }
        return session.name == Self.defaultSessionName ? "\(key)'s default" : session.place
    }

    /// `BEARER_PROXY_URL_<NAME>`: the name upper-cased, `-` as `_` (what `bearer-proxy env` and
    /// `run` export for a named session, so two names must not make one variable).
    package static func urlVariable(of session: String) -> String {
        "BEARER_PROXY_URL_" + session.uppercased().replacingOccurrences(of: "-", with: "_")
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
