import BearerBuildInfo
import BearerConfig
import BearerCore
import BearerDemo
import BearerIO
import BearerProxy
import Glibc

/// `bearer-proxy [--config FILE] …`: command line → configuration → running proxy, until a signal
/// stops it; `--check` validates and prints the configuration, `--demo` runs against the built-in
/// mock servers.
enum ProxyCommand: Command {
    /// What the proxy's command line asked for. Flags that set config keys become entries that
    /// override the file.
    struct Options: Equatable, Sendable {
        var configPath: String?
        var overrides: [ConfigEntry] = []
        var isCheck = false
        var isDemo = false
        /// `--demo json`: the demo's token server is a JSON login/refresh backend instead of OAuth2.
        var isJSONDemo = false
        var isVersion = false

        /// What this command line asks of the configuration.
        var configurationSource: ConfigurationSource {
            ConfigurationSource(configPath: self.configPath, overrides: self.overrides, isDemo: self.isDemo)
        }
    }

    static let watchesSignals = true

    static func options(_ arguments: ParsedArguments) throws(CommandLineError) -> Options {
        var options = Options(
            configPath: arguments.value(of: Self.configFlag),
            overrides: arguments.overrides,
            isCheck: arguments.contains(Self.checkFlag),
            isDemo: arguments.contains(Self.demoFlag),
            isVersion: arguments.contains(Self.versionFlag)
        )
        // An optional backend: `--demo json`, `--demo=json` (`oauth2`, the default, may be named).
        if let backend = arguments.value(of: Self.demoFlag) {
            guard backend == "json" || backend == "oauth2" else { throw .unknownDemo(backend) }
            options.isJSONDemo = backend == "json"
        }
        return options
    }

    static func run(_ options: Options) -> Int32 {
        if options.isVersion {
            Console.write("bearer-proxy \(bearerProxyVersion) (commit \(BuildInfo.commit))\n", to: STDOUT_FILENO)
            return 0
        }
        return options.isCheck ? Self.check(options) : Self.serve(options)
    }
}
