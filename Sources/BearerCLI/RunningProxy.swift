import BearerConfig
import BearerCore
import BearerProxy

/// A proxy this process runs, `bearer-proxy`'s or `bearer-proxy run`'s: the one way to start one,
/// and the one way to drain and stop it.
struct RunningProxy {
    let server: ProxyServer
    let logger: Logger
    private let shutdownTimeout: Duration

    /// Starts the proxy `configuration` describes, its log on stderr at the configured level, its unix
    /// socket files made through `signals` (so that a signal meanwhile removes them). Nil after one
    /// `Error: …` line on stderr: `describe` words it (`run` adds its own way out of a CA problem).
    static func start(
        _ configuration: Configuration,
        signals: SignalWatcher,
        describe: (ProxyServer.StartError) -> String = \.description
    ) -> RunningProxy? {
        let logger = Logger(level: configuration.logLevel, sink: .standardError)
        do throws(ProxyServer.StartError) {
            let server = try ProxyServer.start(
                configuration: configuration,
                logger: logger,
                socketFiles: signals.socketFiles
            )
            return RunningProxy(server: server, logger: logger, shutdownTimeout: configuration.shutdownTimeout)
        } catch {
            writeStandardError("Error: \(describe(error))\n")
            return nil
        }
    }

    /// Closes the listeners, lets in-flight requests finish within shutdown_timeout, then closes
    /// what is left and stops.
    func stop() {
        self.logger.info(
            "shutting down: no new connections; waiting for in-flight requests",
            ["shutdown_timeout": "\(Int(self.shutdownTimeout.seconds))s"]
        )
        let remaining = self.server.drain(timeout: self.shutdownTimeout)
        if remaining > 0 {
            self.logger.warn(
                "shutdown_timeout passed; closing the remaining connections",
                ["connections": "\(remaining)"]
            )
        }
        self.server.shutdown()
        self.logger.info("stopped")
    }
}
