import Foundation
import Testing

/// What a clone holds, as its README promises.
@Suite struct RepositoryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The README's test command is `swift test --disable-xctest`: an XCTest case would never run, and
    /// would count as passed. Every test is a Swift Testing test.
    @Test func noTestUsesXCTest() throws {
        let tests = Self.root.appendingPathComponent("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20, "the Tests folder was not found at \(tests.path)")
        for file in files {
            let lines = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n")
            let importsXCTest = lines.contains { $0.trimmingCharacters(in: .whitespaces).hasSuffix("import XCTest") }
            #expect(!importsXCTest, "\(file) imports XCTest, which `--disable-xctest` never runs")
        }
    }

    /// A user holds only the clone: the README points at nothing outside it.
    @Test func theReadmePointsAtNothingOutsideTheClone() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(!readme.contains("../"), "the README names a path outside the repository")
    }
}
