import Foundation
import PackagePlugin

/// Runs `build-commit.sh` (beside this file), which writes `BuildCommit.swift`: the commit the
/// binary is built from, which `bearer-proxy --version` names, or `unknown` outside a git clone.
///
/// A build command whose inputs are git's `HEAD` and `logs/HEAD` (appended on every commit, checkout,
/// reset or pull), not a prebuild command: SwiftPM runs a prebuild command only when it reloads the
/// package (swift-package-manager #5476), so a binary built after a commit named the one before.
@main struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let package = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated/BuildCommit.swift")
        let script = package.appending(path: "Plugins/BuildCommit/build-commit.sh")
        return [
            .buildCommand(
                displayName: "Recording the commit the binary is built from",
                executable: URL(filePath: "/bin/sh"),
                arguments: [script.path(), package.path(), output.path()],
                environment: ProcessInfo.processInfo.environment.filter { $0.key == "BEARER_PROXY_COMMIT" },
                inputFiles: [script] + Self.headFiles(of: package),
                outputFiles: [output]
            )
        ]
    }

    /// The files git rewrites when HEAD moves, in a clone or a worktree (whose `.git` is a file
    /// naming its git directory); none in a tree without git, which is built once as `unknown`.
    static func headFiles(of package: URL) -> [URL] {
        let dotGit = package.appending(path: ".git")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dotGit.path(), isDirectory: &isDirectory) else { return [] }
        var gitDirectory = dotGit
        if !isDirectory.boolValue {
            guard let text = try? String(contentsOf: dotGit, encoding: .utf8),
                let line = text.split(separator: "\n").first, line.hasPrefix("gitdir: ")
            else { return [] }
            let path = String(line.dropFirst("gitdir: ".count))
            gitDirectory = path.hasPrefix("/") ? URL(filePath: path) : package.appending(path: path)
        }
        return [gitDirectory.appending(path: "HEAD"), gitDirectory.appending(path: "logs/HEAD")].filter {
            FileManager.default.fileExists(atPath: $0.path())
        }
    }
}
