import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc

/// bearer-bench: see `bearer-bench --help` and docs/benchmarks.md.
func benchMain() -> Int32 {
    let options: BenchOptions
    do throws(BenchOptions.ParseError) {
        options = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
    } catch {
        FileHandle.standardError.write(
            Data("Error: \(error)\n  See 'bearer-bench --help' for more information.\n".utf8)
        )
        return 1
    }
    if options.isHelp {
        print(BenchOptions.helpText, terminator: "")
        return 0
    }
    if options.isStackRun { return StackRun.main(options) }
    guard let binary = ChildProxy.locateBinary(options.proxyBinary) else {
        FileHandle.standardError.write(
            Data(
                "Error: bearer-proxy not found next to bearer-bench; build it (swift build -c release) or pass --proxy-bin\n"
                    .utf8
            )
        )
        return 1
    }
    removeTemporaryFilesOnSignals(firstStopsLoad: false)
    raiseFileDescriptorLimit()
    let log: (String) -> Void = { FileHandle.standardError.write(Data("bearer-bench: \($0)\n".utf8)) }
    do {
        let bench = try Bench(options: options, proxyBinary: binary, log: log, progress: ProgressLine())
        defer { bench.shutdown() }
        if options.soak != nil { bench.soak = SoakPlan(sampleEvery: options.sampleEvery) }
        var nginx: NginxTarget?
        if options.withNginx {
            nginx = try NginxTarget.start(upstreamPort: bench.upstream.port, token: options.staticToken, log: log)
        }
        defer { nginx?.stop() }
        let comparison = nginx?.url ?? options.target
        let comparisonName = nginx == nil ? "target" : "nginx"
        // Rounds interleave the scenarios, so that a ratio compares runs made close together in time.
        var rounds: [[ScenarioResult]] = []
        for round in 1...options.repeats {
            let label = "round \(round) of \(options.repeats)"
            var results: [ScenarioResult] = []
            for scenario in options.scenarios {
                results += try bench.results(of: scenario, round: label)
            }
            if let comparison {
                results.append(try bench.runTarget(comparison, name: comparisonName, round: label))
            }
            rounds.append(results)
        }
        if options.soak != nil { return try reportSoak(bench.soakResults, options: options, log: log) }
        let idle = options.idleConnections > 0 ? try bench.measureIdleConnections(options.idleConnections) : nil
        let summaries = ScenarioSummary.group(rounds)
        let ratios = RatioSummary.compute(rounds, comparison: comparison == nil ? nil : comparisonName)
        let settings = BenchReport.Settings(
            connections: options.connections,
            durationSeconds: options.duration.seconds,
            warmupSeconds: options.warmup.seconds,
            rounds: options.repeats,
            rate: options.rate
        )
        print(BenchReport.table(summaries, ratios: ratios, idle: idle, settings: settings), terminator: "")
        if let given = options.jsonPath {
            let path = try prepareOutput(given)
            try BenchReport.json(summaries, ratios: ratios, idle: idle, settings: settings)
                .write(to: URL(fileURLWithPath: path))
            log("wrote \(path)")
        }
        if let given = options.svgPath {
            let path = try prepareOutput(given)
            try SVGChart.render(summaries.map(\.representative)).write(toFile: path, atomically: true, encoding: .utf8)
            log("wrote \(path)")
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
        return 1
    }
}

/// A soak's report: each scenario's samples and verdict, its JSON and chart when asked; 1 when a
/// figure grew or a request went unanswered, so a script can run it as a check.
func reportSoak(_ results: [SoakResult], options: BenchOptions, log: (String) -> Void) throws -> Int32 {
    print(results.map(\.text).joined(separator: "\n"), terminator: "")
    if let given = options.jsonPath {
        let path = try prepareOutput(given)
        let data = try JSONSerialization.data(
            withJSONObject: ["soak": results.map(\.json)],
            options: [.prettyPrinted, .sortedKeys]
        )
        try data.write(to: URL(fileURLWithPath: path))
        log("wrote \(path)")
    }
    if let given = options.svgPath {
        let path = try prepareOutput(given)
        try SoakResult.svg(results).write(toFile: path, atomically: true, encoding: .utf8)
        log("wrote \(path)")
    }
    return results.allSatisfy { $0.isFlat && $0.allAnswered } ? 0 : 1
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP end the run at once, as their default action did, but only
/// after the programs it started have ended (`BenchChildren`: a signal sent to the bench alone does
/// not reach them) and its temporary files (the proxies' configs, the DPoP key, the local CA, nginx's
/// folder: all in the `ScratchSpace`) are gone; an ordinary end, or an error, removes them at exit.
/// The thread that takes the signal dies of it, so a shell sees the status it saw before (130).
/// Call before anything makes a thread (`SignalReceiver`). `firstStopsLoad` (a run against your own
/// stack): the first signal only stops the load (`loadInterrupted`), so that the report is still
/// written; a second one ends the bench as above.
func removeTemporaryFilesOnSignals(firstStopsLoad: Bool) {
    SignalReceiver(blocking: endingSignals).start(name: "bench-signals") { received in
        let isFirstThatStopsLoad =
            firstStopsLoad
            && loadInterrupted.withLock { isSet in
                defer { isSet = true }
                return !isSet
            }
        if isFirstThatStopsLoad { return }
        signalEnding.withLock { $0 = true }
        BenchChildren.endAll(timeout: .seconds(5))
        ScratchSpace.removeAll()
        signal(received.number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, received.number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(received.number)
    }
}

/// The path `--json`/`--svg` write to, its directory created.
func prepareOutput(_ given: String) throws -> String {
    let path = outputPath(given)
    let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return path
}

let endingSignals = [SIGINT, SIGTERM, SIGHUP]

/// Set when a signal's ending has begun (`removeTemporaryFilesOnSignals`).
let signalEnding = Locked(false)

/// Set by the first signal of a run against your own stack: its load stops, its report is written.
let loadInterrupted = Locked(false)

/// The run's status, unless a signal is ending the bench: a Ctrl-C reaches its proxies too, and the
/// run, seeing one die, may return 1 before the signal's thread has cleaned up and died of it (the
/// status a shell expects). So the main thread waits for that end when the signal is taken or still
/// pending (all threads block these signals, so a pending one is seen here).
func exitUnlessASignalIsEnding(_ status: Int32) -> Never {
    var pending = sigset_t()
    sigpending(&pending)
    if signalEnding.withLock({ $0 }) || endingSignals.contains(where: { sigismember(&pending, $0) == 1 }) {
        while true { pause() }
    }
    exit(status)
}

exitUnlessASignalIsEnding(benchMain())
