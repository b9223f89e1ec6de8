import BearerConfig
import BearerCore
import BearerIO
import BearerProxy
import Foundation
import Glibc

/// `bearer-proxy run [--config FILE] [<options>] -- CMD [ARG…]`: the config's proxy, started in this
/// process on the start path of `bearer-proxy --config FILE`, in front of CMD; CMD's exit ends it
/// (README, "Wrapping a program").
enum RunCommand {
    /// `command` took the signals before anything made a thread (`Subcommand.runIfNamed`).
    static func run(_ options: Subcommand.Options, command: WrappedCommand) -> Int32 {
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
            Self.fail(
                WrapError.onlyUnixSockets(place: configuration.listenPlace(of: configuration.defaultSession))
                    .description
            )
            return 1
        }
        let logger = Logger(level: configuration.logLevel, sink: .standardError)
        let server: ProxyServer
        do throws(ProxyServer.StartError) {
            server = try ProxyServer.start(
                configuration: configuration,
                logger: logger,
                socketFiles: command.socketFiles
            )
        } catch {
            Self.fail(error.localCAError?.descriptionUnderRun ?? error.description)
            return 1
        }
        defer {
            // CMD has ended: what its own children may still have in flight is let finish, within
            // shutdown_timeout.
            let remaining = server.drain(timeout: configuration.shutdownTimeout)
            if remaining > 0 {
                logger.warn(
                    "shutdown_timeout passed; closing the remaining connections",
                    ["connections": "\(remaining)"]
                )
            }
            server.shutdown()
        }
        let variables: [String]
        do {
            variables = try Self.childEnvironment(configuration, server: server, parent: environment)
        } catch {
            Self.fail("\(error)")
            return 1
        }
        let pid: pid_t
        do throws(SpawnFailure) {
            pid = try command.spawn(
                options.command,
                environment: variables,
                sharesProcessGroup: WrappedCommand.hasControllingTerminal
            )
        } catch {
            Self.fail(WrapError.cannotStart(program: options.command[0], reason: error.reason).description)
            return error.shellStatus
        }
        return command.waitForExit(pid)
    }

    /// run's settings over the file's: a free loopback port, interception on, the log at warn, no
    /// admin listener; or the flags given to run.
    static func overrides(_ options: Subcommand.Options) -> [ConfigEntry] {
        func entry(_ key: ConfigurationKey, _ flag: String, _ value: String?, default byRun: String) -> ConfigEntry {
            ConfigEntry(
                key: key.name,
                value: value ?? byRun,
                place: value == nil ? "bearer-proxy run" : "command line (\(flag))"
            )
        }
        return [
            entry(.listen, "--listen", options.listen, default: "127.0.0.1:0"),
            entry(.adminListen, "--admin-listen", options.adminListen, default: "off"),
            entry(.tlsIntercept, "--no-intercept", options.intercepts ? nil : "off", default: "on"),
            entry(.logLevel, "--log-level", options.logLevel, default: "warn"),
        ]
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

    /// `Error: …`, after what the log has queued.
    private static func fail(_ line: String) {
        LogSink.standardError.flush()
        Console.write("Error: \(line)\n", to: STDERR_FILENO)
    }
}
