extension Configuration {
    /// The keys of TLS interception.
    static let interceptKeys: [ConfigurationKey] = [
        ConfigurationKey("tls_intercept", show: { $0.intercept.isEnabled ? "on" : "off" }) { value, config in
            guard let isEnabled = ValueParsers.bool(value) else { return "expected on or off, got '\(value)'" }
            config.intercept.isEnabled = isEnabled
            return nil
        },
        ConfigurationKey(
            "ca_dir",
            show: { $0.intercept.caDirectory ?? "(none: set ca_dir, HOME or XDG_DATA_HOME)" }
        ) { value, config in
            var path = ValueParsers.expandingHome(value)
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
            // A relative folder would be another folder, and so another CA, in every working directory.
            guard path.hasPrefix("/") else { return "expected an absolute path (or ~/…), got '\(value)'" }
            config.intercept.caDirectory = path
            return nil
        },
    ]
}
