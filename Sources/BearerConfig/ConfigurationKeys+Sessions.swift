extension ConfigurationKey {
    /// The key only a `[session NAME]` section has (its other own key, `listen`, is the main
    /// listener outside any section).
    package static let mount = ConfigurationKey(
        "mount",
        of: SessionSettings.self,
        namedSessionsOnly: true,
        show: { $0.mount }
    ) {
        value,
        session in
        switch Self.parseMount(value) {
        case .success(let mount):
            session.mount = mount
            return nil
        case .failure(let reason):
            return "\(reason) (expected a path prefix such as /github)"
        }
    }

    /// `/github`, `/api/v2`: a path that starts with `/`, has neither query, fragment nor blanks, and
    /// no `.` or `..` segment (which an upstream would resolve past the prefix). A trailing `/` is
    /// dropped: mounts match whole segments anyway.
    static func parseMount(_ value: String) -> Result<String, MountError> {
        var mount = value
        while mount.count > 1 && mount.hasSuffix("/") { mount.removeLast() }
        guard mount.hasPrefix("/") else { return .failure(MountError("'\(value)' does not start with /")) }
        guard mount != "/" else {
            return .failure(MountError("/ would take every path: the keys outside any section are for that"))
        }
        if let bad = mount.first(where: { $0 == "?" || $0 == "#" || $0 == "%" || $0.isWhitespace || !$0.isASCII }) {
            return .failure(MountError("'\(value)' contains '\(bad)'"))
        }
        let segments = mount.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        if segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            return .failure(MountError("'\(value)' has an empty, . or .. segment"))
        }
        return .success(mount)
    }

    struct MountError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
