import BearerConfig

/// One flag of a command, as its command's table declares it (`CommandSyntax.flags`): what the parser
/// accepts, what the help shows, which config key it sets, and what shell completions need (the
/// names, whether a value follows and what kind of value).
package struct Flag: Equatable, Sendable {
    /// `--config`.
    package var name: String
    /// `-h`, beside `--help`.
    package var shortName: String?
    /// What follows the flag; nil for a switch (`--check`), which takes none (`--check=x` is unknown).
    package var value: Value?
    /// What the help says, its lines broken where they are shown (the 26-column layout).
    package var help: String
    /// What applies without the flag, shown after `help` as `(default: …)`.
    package var defaultValue: Default?
    /// The config key the flag sets over the file's (`--listen` sets `listen`); nil when it sets none.
    package var setting: Setting?

    package init(
        _ name: String,
        short shortName: String? = nil,
        value: Value? = nil,
        help: String,
        default defaultValue: Default? = nil,
        sets setting: Setting? = nil
    ) {
        self.name = name
        self.shortName = shortName
        self.value = value
        self.help = help
        self.defaultValue = defaultValue
        self.setting = setting
    }

    /// The value a flag takes.
    package struct Value: Equatable, Sendable {
        /// `file`, shown as `<file>`.
        package var name: String
        package var kind: Kind
        /// The flag may come without it (`--demo [json]`): then only a next argument that is no flag
        /// is taken as its value.
        package var isOptional = false

        package init(_ name: String, _ kind: Kind, isOptional: Bool = false) {
            self.name = name
            self.kind = kind
            self.isOptional = isOptional
        }

        /// `<file>`, or `[json]` when it may be left out.
        var label: String { self.isOptional ? "[\(self.name)]" : "<\(self.name)>" }
    }

    /// What a value is, for shell completions to offer: files, folders, or the words a flag takes.
    /// The parser takes any text: values are checked where they are used (the config loader checks
    /// what flags set, the proxy `--demo`'s variant), so an error names the same rule as the file's.
    package enum Kind: Equatable, Sendable {
        case file
        case directory
        /// `HOST:PORT`, `[IPv6]:PORT` or `unix:/path`.
        case address
        case url
        /// Any text, nothing to offer (`--scope`).
        case text
        /// A `[session NAME]` of the config file.
        case sessionName
        /// One of these words.
        case choice([String])
    }

    /// `(default: …)` after the help: on the help's last line or on a line of its own.
    package struct Default: Equatable, Sendable {
        /// The default as shown; a `\n` breaks its line there.
        package var text: String
        package var startsLine = false
        /// The help's sentence ends after it: `(default: on, so …).`
        package var endsSentence = false

        package init(_ text: String, startsLine: Bool = false, endsSentence: Bool = false) {
            self.text = text
            self.startsLine = startsLine
            self.endsSentence = endsSentence
        }
    }

    /// The config key a flag sets, and to what: the flag's value, or a fixed one (`--no-intercept`
    /// sets `tls_intercept = off`).
    package struct Setting: Equatable, Sendable {
        package var key: String
        package var value: String?

        /// `key` is the table's constant, so that a flag names a key the way everything else does.
        package init(_ key: ConfigurationKey, to value: String? = nil) {
            self.key = key.name
            self.value = value
        }
    }

    /// `-h, --help`, which every command takes.
    package static let help = Flag("--help", short: "-h", help: "Show help information.")

    /// `--config <file>`, which every command takes; what the file is for depends on the command.
    package static func config(_ help: String, default defaultValue: Default? = nil) -> Flag {
        Flag("--config", value: Value("file", .file), help: help, default: defaultValue)
    }

    /// How the help names it: `--config <file>`, `-h, --help`.
    var label: String {
        [self.shortName].compactMap { $0 }.map { $0 + ", " }.joined() + self.name
            + (self.value.map { " " + $0.label } ?? "")
    }

    /// The help text with its default, line by line.
    var helpLines: [String] {
        var text = self.help
        if let defaultValue = self.defaultValue {
            text += (defaultValue.startsLine ? "\n" : " ") + "(default: \(defaultValue.text))"
            if defaultValue.endsSentence { text += "." }
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }
}
