/// What a command asks of the configuration: the file (`--config`, else the default one) and the
/// settings its flags put over the file's, with the two facts about the command that change what is
/// required and what the loader's hints offer. The command line makes one (`ProxyCommand.Options`,
/// a subcommand's options); the loader knows no flag.
package struct ConfigurationSource: Equatable, Sendable {
    /// `--config FILE`; nil: the default file when it exists (not with `--demo`).
    package var configPath: String?
    /// Settings from flags (`--listen`, `--upstream`, …), over the file's.
    package var overrides: [ConfigEntry]
    /// `--demo`: the demo supplies the upstream, and the default file is not read.
    package var isDemo: Bool
    /// False for the subcommands (`ca`, `env`, `run`, `login`, `logout`), whose command lines have no
    /// `--upstream` or `--demo`: the loader's hints then offer only what they take.
    package var takesProxyFlags: Bool

    package init(
        configPath: String? = nil,
        overrides: [ConfigEntry] = [],
        isDemo: Bool = false,
        takesProxyFlags: Bool = true
    ) {
        self.configPath = configPath
        self.overrides = overrides
        self.isDemo = isDemo
        self.takesProxyFlags = takesProxyFlags
    }
}
