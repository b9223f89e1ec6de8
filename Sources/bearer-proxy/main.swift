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
        if let path = ConfigurationLoader.configFile(for: options) { print("# read from \(path)") }
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
            let environment = try DemoEnvironment(group: group)
            demo = environment
            demoGroup = group
            if configuration.upstream == nil {
                configuration.upstream = try? UpstreamURL.parse(environment.upstream.baseURL).get()
            }
            if !configuration.canRefresh && configuration.accessToken == nil {
                configuration.tokenURL = try? UpstreamURL.parse(environment.tokenServer.url).get()
                configuration.grantType = .clientCredentials
                configuration.clientID = DemoEnvironment.clientID
                configuration.clientSecret = Secret(DemoEnvironment.clientSecret)
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
    if options.isDemo {
        let address = server.boundAddresses[0]
        writeStandardError(
            """

            Demo: behind the proxy run a mock OAuth2 token server, whose tokens live \(DemoEnvironment.tokenLifetime)s, and a
            mock API that accepts only live tokens and revokes them all every \(Int(DemoEnvironment.revokeEvery.seconds))s.
            The proxy refreshes ahead of expiry, and on a 401 refreshes once and replays. Try:

              curl -i http://\(address)/whoami                      # which token generation reached the API
              while sleep 0.5; do curl -s http://\(address)/whoami; done   # refreshes, never a 401
              curl -i -x http://\(address) http://\(address)/items  # the same, as an HTTP proxy

            """
        )
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
