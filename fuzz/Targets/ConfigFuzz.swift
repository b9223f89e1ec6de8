import BearerConfig

/// A config file: the line parser (sections, quoting, `${VAR}`, comments) and then every key's value
/// parser (durations, sizes, URLs, host and request patterns, templates) through the same
/// `Configuration.build` the proxy runs, collecting every mistake. Neither reads a file: the key
/// files a config names are read later, by `ConfigurationLoader`, which is not fuzzed.
enum ConfigFuzz {
    static let environment = ["HOME": "/nonexistent", "TOKEN": "t0ken", "EMPTY": "", "PORT": "8080"]

    static func run(_ input: [UInt8]) {
        var diagnostics = ConfigurationDiagnostics()
        let entries = ConfigFileParser.parse(
            text(input),
            fileName: "fuzz.conf",
            environment: Self.environment,
            into: &diagnostics
        )
        _ = Configuration.build(from: entries, into: &diagnostics)
    }
}
