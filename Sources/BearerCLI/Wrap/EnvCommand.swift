import BearerConfig
import BearerIO
import FoundationEssentials

/// `bearer-proxy env [--config FILE] [--listen ADDR]`: the export lines of `ClientEnvironment` for
/// the configured proxy, on stdout, for `eval "$(bearer-proxy env)"`. Exit 1 with one line on failure.
enum EnvCommand: Command {
    static func run(_ options: Options) -> Int32 {
        Self.run(options, console: .standard)
    }

    static func run(
        _ options: Options,
        console: Console,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Int32 {
        guard
            let configuration = options.loadConfiguration(
                overrides: options.overrides,
                environment: environment,
                secrets: .unused,
                console: console
            )
        else { return 1 }
        do {
            let url = try Self.proxyURL(configuration)
            var trust: ClientTrustFiles?
            if configuration.intercept.isEnabled {
                let prepared = try ClientTrustFiles.prepare(configuration, environment: environment)
                if prepared.madeCA {
                    CACommand.sayMadeCA(
                        in: configuration.intercept.caDirectory ?? "",
                        for: configuration.everyInjectHost,
                        console: console
                    )
                }
                trust = prepared.files
            }
            let variables = ClientEnvironment(
                configuration,
                proxyURL: url,
                trust: trust,
                sessionURLs: try ClientEnvironment.sessionURLs(configuration, proxyURL: url) {
                    (session) throws(WrapError) -> String? in
                    try Self.listenerURL(session, in: configuration)
                }
            )
            Console.write(variables.exportScript, to: console.output)
            return 0
        } catch {
            Console.write("Error: \(error)\n", to: console.errors)
            return 1
        }
    }

    /// The first TCP listen address as a URL.
    static func proxyURL(_ configuration: Configuration) throws(WrapError) -> String {
        guard let url = try Self.listenerURL(configuration.defaultSession, in: configuration) else {
            throw .onlyUnixSockets(place: configuration.listenPlace(of: configuration.defaultSession))
        }
        return url
    }

    /// The first TCP listen address of a session's own listener as a URL; nil when it has none.
    static func listenerURL(_ session: SessionSettings, in configuration: Configuration) throws(WrapError) -> String? {
        for case .hostPort(let host, let port) in session.listen {
            guard port != 0 else { throw .portPickedAtStart(place: configuration.listenPlace(of: session)) }
            return ClientEnvironment.proxyURL(host: host, port: port)
        }
        return nil
    }
}
