extension ConfigurationKey {
    // The keys of TLS interception.

    package static let tlsIntercept = switchKey("tls_intercept", \ProcessSettings.intercept.isEnabled)

    package static let caDir = ConfigurationKey(
        "ca_dir",
        of: ProcessSettings.self,
        show: { $0.intercept.caDirectory ?? "(none: set ca_dir, HOME or XDG_DATA_HOME)" }
    ) { value, process in
        var path = ValueParsers.expandingHome(value)
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        // A relative folder would be another folder, and so another CA, in every working directory.
        guard path.hasPrefix("/") else { return "expected an absolute path (or ~/…), got '\(value)'" }
        process.intercept.caDirectory = path
        return nil
    }
}
