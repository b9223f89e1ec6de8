import BearerCore
import BearerIO
import BearerMocks
import BearerProxy
import Dispatch
import Foundation
import Glibc

/// Command line → configuration → running proxy; signals stop it. Everything else lives in BearerProxy.
func main() -> Int32 {
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
        print("bearer-proxy \(CommandLineOptions.version)")
        return 0
    }
    var configuration: Configuration
    do throws(ConfigurationError) {
        configuration = try ConfigurationLoader.load(options)
    } catch {
        writeStandardError("Error: \(error)\n")
        return 1
    }
    if options.isCheck {
        print(ConfigurationLoader.report(configuration), terminator: "")
        print("configuration OK")
        return 0
    }

    let logger = Logger(level: configuration.logLevel, sink: .standardError)
    var demo: DemoEnvironment?
    var demoGroup: EventLoopGroup?
    if options.isDemo {
        let group = EventLoopGroup(count: 1, name: "demo")
        do throws(IOError) {
            let environment = try DemoEnvironment(group: group, backend: options.isJSONDemo ? .json : .oauth2)
            demo = environment
            demoGroup = group
            if configuration.upstream == nil {
                configuration.upstream = try? UpstreamURL.parse(environment.upstream.baseURL).get()
            }
            if !configuration.canRefresh && configuration.accessToken == nil {
                environment.configureTokens(&configuration)
            }
        } catch {
            writeStandardError("Error: cannot start the demo servers: \(error)\n")
            return 1
        }
    }

    let server: ProxyServer
    do throws(ProxyServer.StartError) {
        server = try ProxyServer.start(configuration: configuration, logger: logger)
    } catch {
        writeStandardError("Error: \(error)\n")
        return 1
    }
    for address in server.boundAddresses {
        logger.announce(
            "listening on \(address)",
            ["upstream": configuration.upstream?.description ?? "-", "workers": "\(configuration.workers)"]
        )
    }
    if let demo {
        writeStandardError(demo.banner(proxy: server.boundAddresses[0]))
    }

    let stop = DispatchSemaphore(value: 0)
    let signalQueue = DispatchQueue(label: "signals")
    var sources: [DispatchSourceSignal] = []
    let stopping = Locked(false)
    for signalNumber in [SIGINT, SIGTERM] {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signalQueue)
        source.setEventHandler {
            let isFirstSignal = stopping.withLock { wasStopping in
                defer { wasStopping = true }
                return !wasStopping
            }
            if isFirstSignal {
                stop.signal()
            } else {
                // A second signal: the operator does not want to wait.
                logger.warn("second signal: exiting now without waiting for in-flight requests")
                server.removeSocketFiles()
                exit(1)
            }
        }
        source.resume()
        sources.append(source)
    }
    signal(SIGHUP, SIG_IGN)
    let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: signalQueue)
    hangUp.setEventHandler {
        logger.info("SIGHUP: re-reading credentials")
        server.runtime.session.reloadCredentials()
    }
    hangUp.resume()
    sources.append(hangUp)

    stop.wait()
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
    demoGroup?.shutdown()
    logger.info("stopped")
    return 0
}

func writeStandardError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

exit(main())
