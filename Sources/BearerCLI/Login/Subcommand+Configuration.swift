import BearerConfig
import Foundation

extension Subcommand.Options {
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
