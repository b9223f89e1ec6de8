import Foundation

/// The files made from the tables, by their path from the repository's root: what `bearer-docs`
/// writes and what the docs tests compare with the checked-in files.
package enum GeneratedFiles {
    /// The command that writes them, as a failure names it.
    package static let regenerateCommand = "swift run bearer-docs"

    /// Each file's path and its contents, given what the file holds now (docs/configuration.md keeps
    /// its hand-written part).
    package static let all: [(path: String, render: @Sendable (_ current: String) -> String)] = [
        ("docs/configuration.md", { ConfigurationReference.render(keepingAbove: $0) }),
        ("proxy.conf.example", { _ in ExampleConfiguration.render() }),
        ("docs/man/bearer-proxy.1", { _ in CommandManPage.render() }),
        ("docs/man/bearer-proxy.conf.5", { _ in ConfigurationManPage.render() }),
    ]

    /// One line for each file under `root` that differs from what the tables make (or is missing).
    package static func staleFiles(under root: URL) -> [String] {
        Self.all.compactMap { path, render in
            let current = (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? ""
            guard current != render(current) else { return nil }
            return "\(path) differs from what the key and flag tables make: run `\(Self.regenerateCommand)`"
                + " and commit the result"
        }
    }

    /// Writes every file under `root` that differs; returns the paths written.
    package static func write(under root: URL) throws -> [String] {
        var written: [String] = []
        for (path, render) in Self.all {
            let url = root.appendingPathComponent(path)
            let current = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
            let wanted = render(current)
            guard wanted != current else { continue }
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try wanted.write(to: url, atomically: true, encoding: .utf8)
            written.append(path)
        }
        return written
    }
}
