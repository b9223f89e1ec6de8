extension ConfigurationKey {
    /// `allow`: with it set, the session's token is used for these requests and no other.
    package static let allow = ConfigurationKey(
        "allow",
        of: SessionSettings.self,
        show: { $0.rules.allow.map { $0.map(\.description).joined(separator: ", ") } }
    ) { value, session in
        let (patterns, mistake) = Self.requestPatterns(value)
        if let mistake { return mistake }
        session.rules.allow = patterns
        return nil
    }

    /// `deny`: requests refused even when `allow` lets them through.
    package static let deny = ConfigurationKey(
        "deny",
        of: SessionSettings.self,
        show: { $0.rules.deny.isEmpty ? nil : $0.rules.deny.map(\.description).joined(separator: ", ") }
    ) { value, session in
        let (patterns, mistake) = Self.requestPatterns(value)
        if let mistake { return mistake }
        session.rules.deny = patterns
        return nil
    }

    /// `audit_log`: what every request did with the credential, one JSON line each.
    package static let auditLog = ConfigurationKey(
        "audit_log",
        of: ProcessSettings.self,
        show: { $0.auditLog.description }
    ) { value, process in
        guard let destination = AccessLogDestination(parsing: value) else {
            return "expected off, stderr or a file path"
        }
        process.auditLog = destination
        return nil
    }

    /// A comma list of `METHOD PATH` patterns, at least one (an empty `allow` is most likely a
    /// `${VAR}` that expanded to nothing, and would refuse everything without saying why).
    private static func requestPatterns(_ value: String) -> (patterns: [RequestPattern], mistake: String?) {
        var patterns: [RequestPattern] = []
        for item in ValueParsers.list(value) {
            switch RequestPattern.parse(item) {
            case .success(let pattern): patterns.append(pattern)
            case .failure(let error): return ([], error.description)
            }
        }
        guard !patterns.isEmpty else { return ([], "no pattern in '\(value)' (expected METHOD PATH, e.g. GET /v1/*)") }
        return (patterns, nil)
    }
}
