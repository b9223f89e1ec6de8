import BearerConfig
import BearerCore
import BearerDemo
import BearerIO
import BearerProxy
import Foundation
import Glibc

/// `bearer-proxy`: command line → configuration → running proxy; signals stop it. A subcommand's
/// first word hands the command line to it (`Subcommand`). The executable's main.swift calls this.
package func bearerProxyMain() -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    if let status = Subcommand.runIfNamed(Array(CommandLine.arguments.dropFirst())) { return status }
    let options: CommandLineOptions
    do throws(CommandLineError) {
        options = try CommandLineOptions.parse(Array(CommandLine.arguments.dropFirst()))
    } catch {
        writeStandardError(error.fullMessage)
        return 1
    }
    if options.isHelp {
        print(CommandLineOptions.helpText, terminator: "")
        return 0
    }
    if options.isVersion {
        print("bearer-proxy \(bearerProxyVersion)")
        return 0
    }
    return options.isCheck ? check(options) : run(options)
}

/// `--check`: leaves no file behind, so signals keep their default meaning (a killed check is not a pass).
func check(_ options: CommandLineOptions) -> Int32 {
    guard var configuration = loadConfiguration(options) else { return 1 }
    if let path = ConfigurationLoader.configFile(for: options.configurationSource) { print("# read from \(path)") }
    if options.isDemo {
        guard let demo = startDemo(options) else { return 1 }
        defer { demo.stop() }
        demo.apply(to: &configuration, options: options)
        print("# --demo: the mock API and token server listen on free loopback ports, new ones each run")
    }
    print(ConfigurationLoader.report(configuration), terminator: "")
    let warnings = configuration.warnings
    if !warnings.isEmpty {
        // After the report, so that a terminal shows them next to the verdict rather than above it.
        fflush(nil)
        writeStandardError(warnings.map { "Warning: \($0)\n" }.joined())
    }
    print(
        "configuration OK" + (warnings.isEmpty ? "" : " (\(warnings.count) warning\(warnings.count == 1 ? "" : "s"))")
    )
    return 0
}

func run(_ options: CommandLineOptions) -> Int32 {
    // Before anything is created, so that a signal at any moment finds what it must clean up.
    let signals = SignalWatcher.start()
    guard var configuration = loadConfiguration(options) else { return 1 }

    let logger = Logger(level: configuration.logLevel, sink: .standardError)
    var demo: DemoMode?
    if options.isDemo {
        guard let started = startDemo(options) else { return 1 }
        started.apply(to: &configuration, options: options)
        demo = started
    }

    let server: ProxyServer
    do throws(ProxyServer.StartError) {
        server = try ProxyServer.start(configuration: configuration, logger: logger, socketFiles: signals.socketFiles)
    } catch {
        writeStandardError("Error: \(error)\n")
        return 1
    }
    signals.serving(server, logger: logger, options: options)
    for address in server.boundAddresses {
        logger.announce(
            "listening on \(address)",
            ["upstream": configuration.upstream?.description ?? "-", "workers": "\(configuration.workers)"]
        )
    }
    for (name, address) in server.sessionAddresses {
        let upstream = configuration.session(named: name)?.upstream?.description ?? "-"
        logger.announce("listening on \(address)", ["session": name, "upstream": upstream])
    }
    if let demo {
        writeStandardError(demo.banner(proxy: server.boundAddresses[0], admin: server.adminAddress))
    }

    signals.waitForStopRequest()
    logger.info(
        "shutting down: no new connections; waiting for in-flight requests",
        ["shutdown_timeout": "\(Int(configuration.shutdownTimeout.seconds))s"]
    )
    let remaining = server.drain(timeout: configuration.shutdownTimeout)
    if remaining > 0 {
        logger.warn("shutdown_timeout passed; closing the remaining connections", ["connections": "\(remaining)"])
    }
    server.shutdown()
    demo?.stop()
    logger.info("stopped")
    return 0
}

/// The demo's mock servers (`--demo json`: the JSON backend), or nil after saying on stderr why they
/// could not start.
func startDemo(_ options: CommandLineOptions) -> DemoMode? {
    do throws(IOError) {
        return try DemoMode.start(backend: options.isJSONDemo ? .json : .oauth2)
    } catch {
        writeStandardError("Error: cannot start the demo servers: \(error)\n")
        return nil
    }
}

/// The configuration, or nil after saying on stderr everything that is wrong with it, one line each.
func loadConfiguration(_ options: CommandLineOptions) -> Configuration? {
    do throws(ConfigurationErrors) {
        return try ConfigurationLoader.load(options.configurationSource)
    } catch {
        writeStandardError(error.errors.map { "Error: \($0)\n" }.joined())
        return nil
    }
}

/// Straight to stderr, after what the log has queued (its lines come first, as they were made first).
func writeStandardError(_ text: String) {
    LogSink.standardError.flush()
    FileHandle.standardError.write(Data(text.utf8))
}
