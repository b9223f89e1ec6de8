import BearerConfig
import BearerCore
import BearerIO
import BearerProxy
import Dispatch
import Glibc

/// SIGTERM, SIGINT and SIGHUP, from the start of a run to its end.
///
/// The signals are blocked in the main thread before anything is created and one thread takes them
/// (`SignalReceiver`): none can find the process half-built with nobody to clean up. What a signal
/// does depends on how far the run is:
/// - starting: remove the unix socket files created so far and exit 0 (nothing is in flight yet);
/// - serving: the first SIGTERM/SIGINT asks `main` to drain and stop; SIGHUP re-reads the config
///   and refreshes the sessions (`ProxyServer.reloadConfiguration`);
/// - stopping: a second SIGTERM/SIGINT exits at once (status 1), removing the socket files.
final class SignalWatcher: Sendable {
    private enum Phase {
        case starting
        case serving(ProxyServer, Logger, CommandLineOptions)
        case stopping(Logger)
    }

    static let signals = [SIGTERM, SIGINT, SIGHUP]

    let socketFiles = UnixSocketFiles()
    private let phase = Locked<Phase>(.starting)
    private let stopRequested = DispatchSemaphore(value: 0)
    private let startupLogger = Logger(level: .info, sink: .standardError)

    /// Blocks the signals in the calling thread (call it from `main` before creating anything) and
    /// starts the thread that waits for them.
    static func start() -> SignalWatcher {
        let receiver = SignalReceiver(blocking: Self.signals)
        let watcher = SignalWatcher()
        receiver.start { watcher.received($0.number) }
        return watcher
    }

    /// The proxy is up: signals now stop it gracefully, and SIGHUP re-reads the config `options` name.
    func serving(_ server: ProxyServer, logger: Logger, options: CommandLineOptions) {
        self.phase.withLock { $0 = .serving(server, logger, options) }
    }

    /// Returns once SIGTERM or SIGINT asked the serving proxy to stop.
    func waitForStopRequest() {
        self.stopRequested.wait()
    }

    private func received(_ number: Int32) {
        let name = Self.name(number)
        let action = self.phase.withLock { phase -> (() -> Void)? in
            switch phase {
            case .starting:
                guard number != SIGHUP else { return nil }
                return {
                    self.startupLogger.info("stopping: signal during start-up", ["signal": name])
                    self.socketFiles.removeAllAndExit(0)
                }
            case .serving(let server, let logger, let options):
                if number == SIGHUP {
                    return {
                        _ = server.reloadConfiguration(
                            file: ConfigurationLoader.configFile(for: options.configurationSource),
                            isDemo: options.isDemo
                        ) { () throws(ConfigurationErrors) in try ConfigurationLoader.load(options.configurationSource)
                        }
                    }
                }
                phase = .stopping(logger)
                return { self.stopRequested.signal() }
            case .stopping(let logger):
                guard number != SIGHUP else { return nil }
                return {
                    // A second signal: the operator does not want to wait.
                    logger.warn("second signal: exiting now without waiting for in-flight requests")
                    self.socketFiles.removeAllAndExit(1)
                }
            }
        }
        action?()
    }

    private static func name(_ number: Int32) -> String {
        switch number {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        default: "\(number)"
        }
    }
}
