import BearerConfig
import FoundationEssentials

/// What every subcommand's options hold: the proxy's config file it reads (`--config`, else the
/// default one), under the flags' settings.
protocol SubcommandOptions {
    var configPath: String? { get }
}

extension SubcommandOptions {
    /// The loader's view of this command line: `--config`, and `overrides` over the file's settings.
    func configurationSource(overrides: [ConfigEntry] = []) -> ConfigurationSource {
        ConfigurationSource(configPath: self.configPath, overrides: overrides, takesProxyFlags: false)
    }

    /// The configuration, or nil after one `Error: …` line per mistake on the console's stderr.
    func loadConfiguration(
        overrides: [ConfigEntry] = [],
        environment: [String: String],
        secrets: ConfigurationLoader.SecretUse,
        console: Console
    ) -> Configuration? {
        do throws(ConfigurationErrors) {
            return try ConfigurationLoader.load(
                self.configurationSource(overrides: overrides),
                environment: environment,
                secrets: secrets
            )
        } catch {
            Console.write(error.errors.map { "Error: \($0)\n" }.joined(), to: console.errors)
            return nil
        }
    }
}

extension Flag {
    /// `--session <name>` of `login` and `logout`: which `[session NAME]` of the file, `action`.
    static func session(_ action: String) -> Flag {
        Flag(
            "--session",
            value: Value("name", .sessionName),
            help: "The [session <name>] of the config file to \(action)",
            default: Default("the\nkeys outside any section", endsSentence: true)
        )
    }
}
