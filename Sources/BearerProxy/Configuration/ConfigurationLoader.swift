import Foundation

/// Reads the config file, applies flags over it, and checks what must be set.
package enum ConfigurationLoader {
    package static func load(
        _ options: CommandLineOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> Configuration {
        var entries: [ConfigEntry] = []
        if let path = options.configPath {
            let text = try ConfigFileReader.read(path)
            entries += try ConfigFileParser.parse(text, fileName: path, environment: environment)
        }
        entries += options.overrides
        let config = try Configuration.build(from: entries)
        try config.validateCombinations(place: options.configPath ?? "configuration")
        if !options.isDemo && config.upstream == nil {
            throw ConfigurationError(
                place: options.configPath ?? "configuration",
                key: "upstream",
                message: "required (set 'upstream = https://api.example.com' or pass --upstream URL; --demo needs none)"
            )
        }
        return config
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
