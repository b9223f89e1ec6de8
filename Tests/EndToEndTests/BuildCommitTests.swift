import BearerTestSupport
import Foundation
import Testing

/// `bearer-proxy --version` names the commit the binary was built from: the BuildCommit plugin runs
/// `Plugins/BuildCommit/build-commit.sh` before each build. Outside a git clone (a source tarball)
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
}
