import Foundation

/// Reads the config file, applies flags over it, and checks what must be set.
package enum ConfigurationLoader {
    package static func load(
        _ options: CommandLineOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> Configuration {
        let path = Self.configFile(for: options, environment: environment)
        var entries: [ConfigEntry] = []
        if let path {
            let text = try ConfigFileReader.read(path)
            entries += try ConfigFileParser.parse(text, fileName: path, environment: environment)
        }
        entries += options.overrides
        let config = try Configuration.build(from: entries)
        try config.validateCombinations(place: path ?? "configuration")
        if !options.isDemo && config.upstream == nil {
            guard let path else {
                let place = DefaultConfigFile.path(environment: environment) ?? "~/.config/bearer-proxy/proxy.conf"
                throw ConfigurationError(
                    place: "configuration",
                    key: "upstream",
                    message:
                        "required: no config file was given (--config FILE) and \(place) does not exist; pass --upstream URL, or try --demo"
                )
            }
            throw ConfigurationError(
                place: path,
                key: "upstream",
                message: "required (set 'upstream = https://api.example.com' or pass --upstream URL; --demo needs none)"
            )
        }
        return config
    }

    /// The file settings come from: `--config`, else the default file when it exists (not with --demo).
    package static func configFile(
        for options: CommandLineOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        if let path = options.configPath { return path }
        return options.isDemo ? nil : DefaultConfigFile.existingPath(environment: environment)
    }

    /// The effective configuration as `key = value` lines, secrets masked (`--check`).
    package static func report(_ config: Configuration) -> String {
        var lines: [String] = []
        for key in Configuration.keys {
            let value = key.show(config)
            if key.isSecret {
                lines.append("\(key.name) = \(value == nil ? "(not set)" : "<redacted>")")
            } else {
                lines.append("\(key.name) = \(value ?? "(not set)")")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
