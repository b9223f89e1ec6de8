import BearerConfig
import BearerTestSupport
import Foundation
import Testing

@testable import BearerDocs

/// The files made from the key table and the flag tables (docs/configuration.md's reference,
/// proxy.conf.example, the man pages) are what the tables make now, and the table documents every key.
@Suite struct GeneratedDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every key the parser accepts has its entry: a paragraph, a value, once.
    @Test func everyKeyIsDocumentedOnce() {
        let missing = Configuration.undocumentedKeys(Configuration.allKeys, in: Configuration.keyGroups)
        #expect(missing.isEmpty, "\(missing.joined(separator: "; ")): add it to Sources/BearerConfig/KeyGroups*.swift")
        let documented = Configuration.keyGroups.flatMap(\.keys).map(\.key.name)
        #expect(Set(documented) == Set(Configuration.allKeys.map(\.name)), "a documented key the parser does not know")
    }

    /// The check names a key whose entry is gone, or given twice.
    @Test func aKeyWithoutItsEntryIsNamed() {
        let groups = Configuration.keyGroups
        let withoutFirst = groups.dropFirst().map { $0 }
        let missing = Configuration.undocumentedKeys(Configuration.allKeys, in: withoutFirst)
        #expect(missing == ["upstream has no documentation", "access_token has no documentation"])
        let twice = Configuration.undocumentedKeys(Configuration.allKeys, in: groups + [groups[0]])
        #expect(twice == ["upstream is documented 2 times", "access_token is documented 2 times"])
    }

    /// The checked-in files are what `swift run bearer-docs` writes.
    @Test func theCheckedInFilesAreWhatTheTablesMake() {
        let stale = GeneratedFiles.staleFiles(under: Self.root)
        #expect(stale.isEmpty, "\(stale.joined(separator: "\n"))")
    }

    /// A changed or missing file is named, with the command that regenerates it; writing makes it
    /// current again and keeps the hand-written part of docs/configuration.md.
    @Test func aChangedFileIsNamedWithTheCommandAndRewritten() throws {
        let copy = URL(fileURLWithPath: try ScratchSpace.newDirectory("docs"))
        let written = try GeneratedFiles.write(under: copy)
        #expect(written.count == GeneratedFiles.all.count)
        #expect(GeneratedFiles.staleFiles(under: copy).isEmpty)
        let reference = copy.appendingPathComponent("docs/configuration.md")
        let text = try String(contentsOf: reference, encoding: .utf8)
        try ("# Configuration\n\nBy hand.\n\n" + text.replacingOccurrences(of: "refresh once", with: "refresh twice"))
            .write(to: reference, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(at: copy.appendingPathComponent("proxy.conf.example"))
        #expect(
            GeneratedFiles.staleFiles(under: copy) == [
                "docs/configuration.md differs from what the key and flag tables make: run `swift run bearer-docs`"
                    + " and commit the result",
                "proxy.conf.example differs from what the key and flag tables make: run `swift run bearer-docs`"
                    + " and commit the result",
            ]
        )
        #expect(try GeneratedFiles.write(under: copy) == ["docs/configuration.md", "proxy.conf.example"])
        let rewritten = try String(contentsOf: reference, encoding: .utf8)
        #expect(rewritten.hasPrefix("# Configuration\n\nBy hand.\n\n") && !rewritten.contains("refresh twice"))
    }

    /// Each key's reference entry names where it may be set, its value and its default.
    @Test func theReferenceGivesEachKeysPlaceValueAndDefault() throws {
        let text = ConfigurationReference.render(keepingAbove: "")
        for key in Configuration.allKeys {
            let entry = try #require(text.range(of: "#### `\(key.name)`\n"), "\(key.name)")
            let next = text[entry.upperBound...].prefix(600)
            #expect(next.contains("- where: \(key.placement)"), "\(key.name)")
            #expect(next.contains("- value: "), "\(key.name)")
            #expect(next.contains("- default: "), "\(key.name)")
        }
        let placements = Dictionary(uniqueKeysWithValues: Configuration.allKeys.map { ($0.name, $0.placement) })
        #expect(placements["mount"] == "in [session NAME] sections only")
        #expect(placements["workers"] == "outside any section (process-wide)")
    }

    /// groff formats both pages without a warning (`-ww`: all of them), as `man -l` would show them.
    @Test(.requires(.groff), arguments: ["docs/man/bearer-proxy.1", "docs/man/bearer-proxy.conf.5"])
    func theManPagesFormatWithoutWarnings(page: String) throws {
        let outcome = try runProgram(
            [ExternalTool.groff.program, "-ww", "-man", "-Tutf8", Self.root.appendingPathComponent(page).path],
            timeout: .seconds(30)
        )
        #expect(outcome.status == 0)
        #expect(outcome.standardError.isEmpty, "\(page): \(outcome.standardError)")
        #expect(outcome.standardOutput.count > 2000, "\(page) formats to almost nothing")
    }
}
