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
            if configuration.accessToken == nil { configuration.accessToken = Secret(DemoEnvironment.token) }
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
        logger.info(
            "listening on \(address)",
            ["upstream": configuration.upstream?.description ?? "-", "workers": "\(configuration.workers)"])
    }
    if options.isDemo {
        let address = server.boundAddresses[0]
        writeStandardError(
            """

            Demo: a mock API runs behind the proxy and accepts only the proxy's token. Try:
              curl -i http://\(address)/whoami
              curl -i -x http://\(address) http://\(address)/items

            """)
    }

    let stop = DispatchSemaphore(value: 0)
    let signalQueue = DispatchQueue(label: "signals")
    var sources: [DispatchSourceSignal] = []
    for signalNumber in [SIGINT, SIGTERM] {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signalQueue)
        source.setEventHandler { stop.signal() }
        source.resume()
        sources.append(source)
    }
    stop.wait()
    logger.info("shutting down")
    server.shutdown()
    demo?.stop()
    demoGroup?.shutdown()
    return 0
}

func writeStandardError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

exit(main())
