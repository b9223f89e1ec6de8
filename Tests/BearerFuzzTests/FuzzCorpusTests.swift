import BearerFuzzTargets
import Foundation
import Testing

/// The fuzz targets on their corpora (fuzz/corpus/TARGET): the seeds and every input that once
/// crashed a target, replayed in the ordinary run. A regression stops the test process, as it
/// stopped the fuzzer.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fuzz/corpus").path

    @Test(arguments: FuzzTarget.allCases)
    func everyTargetRunsItsWholeCorpus(_ target: FuzzTarget) throws {
        let files = Replay.files(at: "\(Self.corpus)/\(target.rawValue)")
        #expect(files.count >= 3, "fuzz/corpus/\(target.rawValue) holds \(files.count) inputs")
        for file in files { target.run(Replay.contents(of: file)) }
    }

    @Test func everyCorpusFolderIsATarget() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpus).sorted()
        #expect(folders == FuzzTarget.allCases.map(\.rawValue).sorted())
    }
}
