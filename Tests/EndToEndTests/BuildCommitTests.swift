import BearerTestSupport
import Foundation
import Testing

/// `bearer-proxy --version` names the commit the binary was built from: the BuildCommit plugin runs
/// `Plugins/BuildCommit/build-commit.sh` whenever HEAD has moved. Outside a git clone (a source tarball)
/// it writes `unknown` and the build goes on.
@Suite struct BuildCommitTests {
    static let script = RepositoryTests.root.appendingPathComponent("Plugins/BuildCommit/build-commit.sh").path

    /// This clone's HEAD as the script names it, or `unknown` without git (what the build recorded).
    static func headCommit() throws -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/git") else { return "unknown" }
        let outcome = try runProgram(
            ["/usr/bin/git", "-C", RepositoryTests.root.path, "rev-parse", "--short=7", "HEAD"],
            timeout: .seconds(20)
        )
        return outcome.status == 0 ? outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
    }

    static func recordedCommit(in folder: String, environment: [String: String] = [:]) throws -> String {
        let output = try ScratchSpace.newPath("BuildCommit.swift")
        let outcome = try runProgram(
            ["/bin/sh", Self.script, folder, output],
            environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 },
            timeout: .seconds(20)
        )
        #expect(outcome.status == 0, "\(outcome.standardError)")
        return try String(contentsOfFile: output, encoding: .utf8)
    }

    @Test func aTreeWithoutGitIsBuiltAsCommitUnknown() throws {
        let folder = try ScratchSpace.newDirectory("tarball")
        #expect(
            try Self.recordedCommit(in: folder)
                == "extension BuildInfo { package static let commit = \"unknown\" }\n"
        )
        #expect(
            try Self.recordedCommit(in: folder, environment: ["BEARER_PROXY_COMMIT": "1a2b3c4"])
                == "extension BuildInfo { package static let commit = \"1a2b3c4\" }\n"
        )
    }

    @Test func aCloneIsBuiltAsItsHead() throws {
        #expect(
            try Self.recordedCommit(in: RepositoryTests.root.path)
                == "extension BuildInfo { package static let commit = \"\(try Self.headCommit())\" }\n"
        )
    }

    /// A package of one library using the plugin and a commit on top: `swift build` after the commit
    /// must record it without a clean build (a prebuild command ran only when SwiftPM reloaded the
    /// package, so the second build kept the first commit). What is checked is the generated file:
    /// recompiling it within the same second as the last compile is the Swift driver's business.
    @Test(.timeLimit(.minutes(3))) func aBuildAfterACommitRecordsTheNewCommit() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/git") else { return }
        let folder = try ScratchSpace.newDirectory("plugin-fixture")
        let plugin = "\(folder)/Plugins/BuildCommit"
        try FileManager.default.createDirectory(atPath: plugin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "\(folder)/Sources/Info", withIntermediateDirectories: true)
        for file in ["plugin.swift", "build-commit.sh"] {
            try FileManager.default.copyItem(
                atPath: RepositoryTests.root.appendingPathComponent("Plugins/BuildCommit/\(file)").path,
                toPath: "\(plugin)/\(file)"
            )
        }
        try """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(
            name: "fixture",
            targets: [
                .target(name: "Info", plugins: ["BuildCommit"]),
                .plugin(name: "BuildCommit", capability: .buildTool()),
            ]
        )
        """.write(toFile: "\(folder)/Package.swift", atomically: false, encoding: .utf8)
        try "package enum BuildInfo {}\n".write(
            toFile: "\(folder)/Sources/Info/BuildInfo.swift",
            atomically: false,
            encoding: .utf8
        )
        func run(_ arguments: [String]) throws {
            let outcome = try runProgram(arguments, in: folder, timeout: .seconds(120))
            #expect(outcome.status == 0, "\(arguments.joined(separator: " ")): \(outcome.standardError)")
        }
        let git = ["/usr/bin/git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
        func recorded() throws -> String {
            // The plugin's outputs live under the package's identity: its folder's name, lowercased.
            let identity = URL(filePath: folder).lastPathComponent.lowercased()
            let generated = "\(folder)/.build/plugins/outputs/\(identity)/Info/destination/BuildCommit/Generated"
            return try String(contentsOfFile: "\(generated)/BuildCommit.swift", encoding: .utf8)
        }
        func head() throws -> String {
            let outcome = try runProgram(git + ["rev-parse", "--short=7", "HEAD"], in: folder, timeout: .seconds(20))
            return "extension BuildInfo { package static let commit = \"\(outcome.standardOutput.prefix(7))\" }\n"
        }
        try run(git + ["init", "-q"])
        try run(git + ["add", "-A"])
        try run(git + ["commit", "-q", "-m", "one"])
        try run(["/usr/bin/env", "swift", "build"])
        #expect(try recorded() == head())
        for message in ["two", "three"] {
            try run(git + ["commit", "-q", "--allow-empty", "-m", message])
            try run(["/usr/bin/env", "swift", "build"])
            #expect(try recorded() == head())
        }
    }
}
