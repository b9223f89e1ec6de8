import BearerDocs
import Foundation

// `swift run bearer-docs`: writes docs/configuration.md's reference, proxy.conf.example and the man
// pages from the key table and the commands' flag tables, in the repository this file belongs to.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
do {
    let written = try GeneratedFiles.write(under: root)
    print(
        written.isEmpty
            ? "bearer-docs: every file is up to date" : written.map { "wrote \($0)" }.joined(separator: "\n")
    )
} catch {
    FileHandle.standardError.write(Data("bearer-docs: \(error)\n".utf8))
    exit(1)
}
