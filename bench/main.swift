import BearerCore
import BearerIO
import Foundation
import Glibc

/// bearer-bench: see `bearer-bench --help` and the README's benchmark section.
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
    guard let binary = ChildProxy.locateBinary(options.proxyBinary) else {
        FileHandle.standardError.write(
            Data(
                "Error: bearer-proxy not found next to bearer-bench; build it (swift build -c release) or pass --proxy-bin\n"
                    .utf8
            )
        )
        return 1
    }
    raiseFileDescriptorLimit()
    let log: (String) -> Void = { FileHandle.standardError.write(Data("bearer-bench: \($0)\n".utf8)) }
    do {
        let bench = try Bench(options: options, proxyBinary: binary, log: log)
        defer { bench.shutdown() }
        var results: [ScenarioResult] = []
        for scenario in options.scenarios {
            results.append(try bench.run(scenario))
        }
        var nginx: NginxTarget?
        if options.withNginx {
            nginx = try NginxTarget.start(upstreamPort: bench.upstream.port, token: options.staticToken, log: log)
        }
        defer { nginx?.stop() }
        if let url = nginx?.url ?? options.target {
            results.append(try bench.runTarget(url, name: nginx == nil ? "target" : "nginx"))
        }
        let idle = options.idleConnections > 0 ? try bench.measureIdleConnections(options.idleConnections) : nil
        let ratios = BenchRatios(results.map { $0.name == "nginx" ? renamed($0, "target") : $0 })
        print(BenchReport.table(results, ratios: ratios, idle: idle), terminator: "")
        if let path = options.jsonPath {
            try BenchReport.json(results, ratios: ratios, idle: idle).write(to: URL(fileURLWithPath: path))
        }
        if let path = options.svgPath {
            try SVGChart.render(results).write(toFile: path, atomically: true, encoding: .utf8)
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
        return 1
    }
}

func renamed(_ result: ScenarioResult, _ name: String) -> ScenarioResult {
    var copy = result
    copy.name = name
    return copy
}

exit(benchMain())
