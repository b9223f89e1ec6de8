import BearerConfig
import BearerCore
import BearerIO
import BearerProxy
import FoundationEssentials
import Glibc

/// `bearer-proxy run [--config FILE] [<options>] -- CMD [ARG…]`: the config's proxy, started, drained
/// and stopped in this process as `bearer-proxy --config FILE` does it (`RunningProxy`), in front of
/// CMD; CMD's exit ends it, and the one `SignalWatcher` passes CMD the signals (docs/wrapping.md, "Wrapping a
/// program").
enum RunCommand: Command {
    static let watchesSignals = true

    static func run(_ options: Options) -> Int32 {
        // Before anything makes a thread: the program's signals are taken from the start.
        let signals = SignalWatcher.start(wrapsProgram: true)
        let environment = ProcessInfo.processInfo.environment
        guard
            var configuration = options.loadConfiguration(
                overrides: Self.overrides(options),
                environment: environment,
                secrets: .used,
                console: .standard
            )
        else { return 1 }
        Self.listenOnFreePorts(&configuration)
        guard configuration.listen.contains(where: { if case .hostPort = $0 { true } else { false } }) else {
            writeStandardError(
                "Error: \(WrapError.onlyUnixSockets(place: configuration.listenPlace(of: configuration.defaultSession)))\n"
            )
            return 1
        }
        guard
            let proxy = RunningProxy.start(
                configuration,
                signals: signals,
                describe: { error in
                    error.localCAError?.descriptionUnderRun ?? error.description
                }
            )
        else { return 1 }
        // The program has ended: what its own children may still have in flight is let finish.
        defer { proxy.stop() }
        let variables: [String]
        do {
            variables = try Self.childEnvironment(configuration, server: proxy.server, parent: environment)
        } catch {
            writeStandardError("Error: \(error)\n")
            return 1
        }
        let pid: pid_t
        do throws(SpawnFailure) {
            pid = try signals.spawn(
                options.program,
                environment: variables,
                sharesProcessGroup: SignalWatcher.hasControllingTerminal
            )
        } catch {
            writeStandardError("Error: \(WrapError.cannotStart(program: options.program[0], reason: error.reason))\n")
            return error.shellStatus
        }
        return signals.waitForExit(pid)
    }

    /// run's settings over the file's: a free loopback port, interception on, the log at warn, no
    /// admin listener; the flags given to run over those, and `--only-inject-hosts` (other_hosts =
    /// deny) over the file's other_hosts.
    static func overrides(_ options: Options) -> [ConfigEntry] {
        let byRun: [(ConfigurationKey, String)] = [
            (.listen, "127.0.0.1:0"), (.adminListen, "off"), (.tlsIntercept, "on"), (.logLevel, "warn"),
        ]
        let settings = byRun.map { key, value in
            options.overrides.last { $0.key == key.name }
                ?? ConfigEntry(key: key.name, value: value, place: "bearer-proxy run")
        }
        return settings + options.overrides.filter { $0.key == ConfigurationKey.otherHosts.name }
    }

    /// A named session's own listener moves to a free loopback port as the main one does: a proxy of
    /// the same config that already runs keeps its ports, and CMD learns the new ones from
    /// `BEARER_PROXY_URL_<NAME>`.
    static func listenOnFreePorts(_ configuration: inout Configuration) {
        for index in configuration.sessions.indices.dropFirst() where !configuration.sessions[index].listen.isEmpty {
            configuration.sessions[index].listen = [.hostPort(host: "127.0.0.1", port: 0)]
            configuration.provenance.record(.listen, at: "bearer-proxy run", in: configuration.sessions[index].name)
        }
    }

    /// `bearer-proxy env`'s variables for the proxy that now listens, over `parent` less the
    /// variables the config expanded into secrets.
    private static func childEnvironment(
        _ configuration: Configuration,
        server: ProxyServer,
        parent: [String: String]
    ) throws -> [String] {
        // A TCP address is among them: checked before the start.
        let address = server.boundAddresses.first { !$0.isUnix }!
        let (host, port) = (address.hostText!, address.port!)
        let trust =
            configuration.intercept.isEnabled
            ? try ClientTrustFiles.prepare(configuration, environment: parent).files : nil
        let url = ClientEnvironment.proxyURL(host: host, port: port)
        let sessionURLs = try ClientEnvironment.sessionURLs(configuration, proxyURL: url) { session in
            server.sessionAddresses.first { $0.session == session.name && !$0.address.isUnix }.map { bound in
                ClientEnvironment.proxyURL(host: bound.address.hostText!, port: bound.address.port!)
            }
        }
        return ClientEnvironment(configuration, proxyURL: url, trust: trust, sessionURLs: sessionURLs).applied(
            to: parent,
            removing: configuration.provenance.secretVariables
        )
    }

}
