import BearerCore
import BearerIO
import Foundation
import Glibc

/// A run against your own stack (`--config`, or `--proxy` and `--admin`): load through the proxy to
/// the session's upstream, a steady phase and then one with an expiry storm forced every
/// `--refresh-every` (`StormDriver`), each measured alone so that the report sets them side by side.
struct StackRun {
    let options: BenchOptions
    let log: (String) -> Void
    let progress: ProgressLine
    /// Set by the first Ctrl-C: the load stops at once and the report is still written.
    let isInterrupted: @Sendable () -> Bool

    /// One measured phase.
    struct Phase {
        var name: String
        var load: LoadGenerator.Result
        var storms: [StormDriver.Storm] = []
        var naturals: [StormDriver.NaturalRefresh] = []
        /// Refreshes of the session that ended during the phase (`/metrics`); nil when it could not be read.
        var refreshesEnded: Int?
    }

    struct Outcome {
        var target: StackTarget
        var rate: Double?
        var proxy: String
        var phases: [Phase]
        var interrupted: Bool
    }

    /// `--rate` when the upstream is not loopback and none was given: a real API is not loaded as
    /// hard as a machine can.
    static let defaultRemoteRate = 100.0

    /// `bearer-bench --config …` / `--proxy … --admin …`: says what it will do, refuses a remote
    /// upstream without `--yes` (having sent nothing), runs, reports. 130 after a Ctrl-C (the report
    /// written all the same).
    static func main(_ options: BenchOptions) -> Int32 {
        removeTemporaryFilesOnSignals(firstStopsLoad: true)
        raiseFileDescriptorLimit()
        let log: (String) -> Void = { FileHandle.standardError.write(Data("bearer-bench: \($0)\n".utf8)) }
        let run = StackRun(options: options, log: log, progress: ProgressLine()) { loadInterrupted.withLock { $0 } }
        do {
            let (target, proxyLabel) = try run.resolveTarget()
            let rate = options.rate ?? (target.isLoopback ? nil : Self.defaultRemoteRate)
            FileHandle.standardError.write(Data(target.plan(options: options, rate: rate, through: proxyLabel).utf8))
            guard target.isLoopback || options.assumeYes else {
                throw BenchError(
                    "the upstream \(target.upstream) is not this machine: pass --yes to send this load to it and call its token endpoint (nothing was sent)"
                )
            }
            var binary: String?
            if options.proxyURL == nil {
                binary = ChildProxy.locateBinary(options.proxyBinary)
                guard binary != nil else {
                    throw BenchError(
                        "bearer-proxy not found next to bearer-bench; build it (swift build -c release) or pass --proxy-bin"
                    )
                }
            }
            let outcome = try run.run(target: target, rate: rate, proxyLabel: proxyLabel, binary: binary)
            let report = StackReport(outcome, settings: options)
            print(report.text, terminator: "")
            if let given = options.jsonPath {
                let path = try prepareOutput(given)
                try report.json.write(to: URL(fileURLWithPath: path))
                log("wrote \(path)")
            }
            if let given = options.svgPath {
                let path = try prepareOutput(given)
                try report.svg.write(toFile: path, atomically: true, encoding: .utf8)
                log("wrote \(path)")
            }
            return outcome.interrupted ? 130 : 0
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            return 1
        }
    }

    /// What the run aims at, before anything is sent: from the config, or the running proxy's /status.
    func resolveTarget() throws -> (target: StackTarget, proxyLabel: String) {
        let path = self.options.path ?? "/"
        if let proxy = self.options.proxyURL, let adminURL = self.options.adminURL {
            let admin = try StackAdmin(url: adminURL, session: self.options.sessionName)
            let status = try admin.status(session: self.options.sessionName)
            let target = try StackTarget.fromStatus(status, session: self.options.sessionName, requestPath: path)
            return (target, proxy)
        }
        let config = self.options.configPath ?? ""
        let target = try StackTarget.fromConfig(config, session: self.options.sessionName, requestPath: path)
        return (target, "a bearer-proxy started with \(config)")
    }

    /// Starts the proxy when it is not running, runs both phases (the second unless interrupted).
    func run(target: StackTarget, rate: Double?, proxyLabel: String, binary: String?) throws -> Outcome {
        var child: ChildProxy?
        defer { child?.stop() }
        let proxyAddress: SocketAddress
        let admin: StackAdmin
        if let proxy = self.options.proxyURL, let adminURL = self.options.adminURL {
            guard let address = socketAddress(of: proxy) else {
                throw BenchError("--proxy must be http://IP:PORT, the proxy's listener, got '\(proxy)'")
            }
            proxyAddress = address
            admin = try StackAdmin(url: adminURL, session: self.options.sessionName)
        } else {
            guard let binary else { throw BenchError("bearer-proxy not found next to bearer-bench; pass --proxy-bin") }
            let started = try ChildProxy(
                binary: binary,
                arguments: [
                    "--config", self.options.configPath ?? "", "--listen", "127.0.0.1:0", "--admin-listen",
                    "127.0.0.1:0",
                ]
            )
            child = started
            guard let port = started.waitForPort(), let adminPort = started.adminPort else {
                let last = started.standardError.split(separator: "\n").last ?? "no output"
                throw BenchError("bearer-proxy did not start: \(last)")
            }
            proxyAddress = SocketAddress(ipAddress: "127.0.0.1", port: port)!
            admin = StackAdmin(
                address: SocketAddress(ipAddress: "127.0.0.1", port: adminPort)!,
                session: self.options.sessionName
            )
        }
        let status = try self.waitForToken(admin)
        // A session with a listener of its own is reached there, without the mount.
        var address = proxyAddress
        var requestTarget = target.path
        if let listen = status.listen, let own = socketAddress(of: "http://\(listen)") {
            address = own
            requestTarget = self.options.path ?? "/"
        }
        let body = ["POST", "PUT", "PATCH"].contains(self.options.method) ? "Content-Length: 0\r\n" : ""
        let load = LoadGenerator.Target(
            address: address,
            hostHeader: "\(address)",
            requestTarget: requestTarget,
            extraHeaders: body,
            method: self.options.method
        )
        let group = EventLoopGroup(count: self.options.loadThreads, name: "bench-load")
        defer { group.shutdown() }
        var phases = [
            self.phase("steady", load: load, group: group, rate: rate, admin: admin, status: status, storms: false)
        ]
        if !self.isInterrupted() {
            phases.append(
                self.phase("storms", load: load, group: group, rate: rate, admin: admin, status: status, storms: true)
            )
        }
        return Outcome(target: target, rate: rate, proxy: proxyLabel, phases: phases, interrupted: self.isInterrupted())
    }

    /// The session's status once it has a token (the proxy fetches one at start), or why it has none.
    private func waitForToken(_ admin: StackAdmin) throws -> StackAdmin.SessionStatus {
        let deadline = Instant.now() + .seconds(30)
        while true {
            let status = try admin.status(session: self.options.sessionName)
            let state = status.fields["state"] as? String ?? ""
            if state == "ready" { return status }
            if state == "failed" || state == "logged_out" || Instant.now() > deadline || self.isInterrupted() {
                let failure = status.fields["failure"] as? String ?? "state \(state)"
                throw BenchError("the session has no token to load with: \(failure)")
            }
            usleep(50_000)
        }
    }

    private func phase(
        _ name: String,
        load: LoadGenerator.Target,
        group: EventLoopGroup,
        rate: Double?,
        admin: StackAdmin,
        status: StackAdmin.SessionStatus,
        storms: Bool
    ) -> Phase {
        let duration = self.options.duration
        let warmup = storms ? Duration.zero : self.options.warmup
        self.log("\(name): \(self.options.connections) connections, \(formatSeconds(duration)) measured")
        let generator = LoadGenerator(
            targets: [load],
            connections: self.options.connections,
            pipeline: 1,
            group: group,
            rate: rate
        )
        let driver = StormDriver(admin: admin, session: self.options.sessionName)
        var before: Int?
        var phase = Phase(name: name, load: LoadGenerator.Result())
        phase.load = generator.run(
            warmup: warmup,
            duration: duration,
            onMeasurementStart: {
                let start = Instant.now()
                before = try? admin.refreshesEnded(metricsName: status.metricsName)
                // No storm in the last moments: its parked requests would fall past the end.
                let quiet = min(self.options.refreshEvery / 2, .milliseconds(500))
                driver.start(
                    every: storms ? self.options.refreshEvery : nil,
                    from: start,
                    quietAfter: start + duration - quiet
                )
            },
            onMeasurementEnd: {
                (phase.storms, phase.naturals) = driver.stop()
            },
            progress: { stage, elapsed, completed in
                let total = stage == .warmup ? warmup : duration
                self.progress.show(
                    ProgressLine.text(label: name, phase: stage, elapsed: elapsed, of: total, completed: completed)
                )
            },
            isInterrupted: self.isInterrupted
        )
        self.progress.clear()
        if let before, let after = try? admin.refreshesEnded(metricsName: status.metricsName) {
            phase.refreshesEnded = after - before
        }
        return phase
    }
}
