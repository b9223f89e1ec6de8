import BearerCore
import BearerTestSupport
import Foundation
import Testing

@testable import bearer_bench

/// `--scenario grpc`: its options, and a short run against the built proxy.
@Suite struct GRPCBenchTests {
    @Test func grpcStreamsAreAList() throws {
        #expect(try BenchOptions.parse(["--scenario", "grpc"]).grpcStreams == [64, 256])
        let options = try BenchOptions.parse(["--scenario", "grpc", "--grpc-streams", "8,32"])
        #expect(options.scenarios == [.grpc])
        #expect(options.grpcStreams == [8, 32])
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--grpc-streams", "8,x"]) }
        #expect(throws: BenchOptions.ParseError.self) { try BenchOptions.parse(["--grpc-streams", "0"]) }
    }

    /// Each load steady and under the storm: every call the clients made ended OK (their
    /// grpc-status read, not the HTTP status), the storm cost one token call per expiry event and
    /// the upstream's refusals were replayed; steady cost none.
    @Test func grpcAnswersEveryCallWithOneTokenCallPerExpiry() throws {
        let bench = try shortBench(connections: 4) {
            $0.proxyWorkers = 2
            $0.grpcStreams = [8, 64]
        }
        defer { bench.shutdown() }
        let results = try bench.results(of: .grpc)
        #expect(results.map(\.name) == ["grpc-steady-8", "grpc-8", "grpc-steady-64", "grpc-64"])
        for result in results {
            #expect(result.requests > 0, "\(result.name)")
            #expect(result.errors.isEmpty, "\(result.name): \(result.errors)")
            if result.name.hasPrefix("grpc-steady-") {
                #expect(result.tokenCalls == 0 && result.replays == 0, "\(result.name)")
            } else {
                #expect(result.expiryEvents >= 2, "\(result.name)")
                #expect(
                    result.tokenCalls == result.expiryEvents,
                    "\(result.name): token calls \(result.tokenCalls) for \(result.expiryEvents) expiry events"
                )
                #expect(result.replays > 0, "\(result.name): the storm was not exercised")
            }
        }
        let ratios = RatioSummary.compute([results], comparison: nil).map(\.key)
        for streams in [8, 64] {
            #expect(ratios.contains("grpc_\(streams)_over_steady"), "\(ratios)")
            #expect(ratios.contains("grpc_\(streams)_over_steady_per_core"), "\(ratios)")
        }
    }
}
