import BearerConfig
import BearerCore
import BearerCrypto
import BearerHTTP
import FoundationEssentials
import Glibc

/// `bearer-proxy ca [--config FILE] [--renew] [--bundle]`: prints the absolute path of ca.pem (or,
/// with `--bundle`, of the bundle.pem it wrote), one line on stdout, so that
/// `NODE_EXTRA_CA_CERTS=$(bearer-proxy ca)` works. Makes the CA for the config's inject hosts when
/// there is none, and says so on stderr; `--renew` makes a new one first. Exit 1 with one line on
/// failure.
enum CACommand: Command {
    static func run(_ options: Options) -> Int32 {
        Self.run(options, console: .standard)
    }

    static func run(
        _ options: Options,
        console: Console,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Int32 {
        // Only the inject hosts and ca_dir are read: no secret.
        guard
            let configuration = options.loadConfiguration(environment: environment, secrets: .unused, console: console)
        else { return 1 }
        do throws(LocalCAError) {
            console.say(
                try Self.perform(options, configuration: configuration, environment: environment, console: console)
            )
            return 0
        } catch {
            Console.write("Error: \(error)\n", to: console.errors)
            return 1
        }
    }

    /// The path to print.
    private static func perform(
        _ options: Options,
        configuration: Configuration,
        environment: [String: String],
        console: Console
    ) throws(LocalCAError) -> String {
        guard let directory = configuration.intercept.caDirectory else { throw .noDirectory }
        let files = CAFiles(directory: directory)
        let hosts = configuration.everyInjectHost
        let trustStore = SystemTrustStore(environment: environment)
        let now = wallClockEpochSeconds()
        let ca: LocalCA
        if options.renewsCA {
            ca = try LocalCA.renew(files, permitting: hosts, now: now, trustStore: trustStore)
            Console.write(
                "Made a new local CA in \(directory) for \(HostPattern.hostList(hosts)): clients must trust the new ca.pem, and running proxies be restarted.\n",
                to: console.errors
            )
        } else {
            let opened = try LocalCA.open(files, permitting: hosts, now: now)
            if opened.wasCreated { Self.sayMadeCA(in: directory, for: hosts, console: console) }
            ca = opened.ca
        }
        guard options.writesBundle else { return files.root }
        try files.withLock { () throws(LocalCAError) in try ca.writeBundle(to: files, trustStore: trustStore) }
        return files.bundle
    }

    /// On stderr: a CA was made (`ca`, `env`), which clients must now trust.
    static func sayMadeCA(in directory: String, for hosts: [HostPattern], console: Console) {
        Console.write(
            "Made a new local CA in \(directory) for \(HostPattern.hostList(hosts)): clients must trust its ca.pem.\n",
            to: console.errors
        )
    }
}
