import Foundation
import PackagePlugin

/// Before every build, runs `build-commit.sh` (beside this file), which writes `BuildCommit.swift`:
/// the commit the binary is built from, which `bearer-proxy --version` names, or `unknown` outside a
/// git clone. A prebuild command, so that a new commit is seen without a clean build.
@main struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        let script = context.package.directoryURL.appending(path: "Plugins/BuildCommit/build-commit.sh")
        return [
            .prebuildCommand(
                displayName: "Recording the commit the binary is built from",
                executable: URL(filePath: "/bin/sh"),
                arguments: [
                    script.path(), context.package.directoryURL.path(),
                    output.appending(path: "BuildCommit.swift").path(),
                ],
                environment: ProcessInfo.processInfo.environment.filter { $0.key == "BEARER_PROXY_COMMIT" },
                outputFilesDirectory: output
            )
        ]
    }
}
