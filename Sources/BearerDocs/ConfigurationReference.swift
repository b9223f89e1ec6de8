import BearerConfig

/// The reference part of docs/configuration.md: every key of the table under its topic, with where it
/// may be set, its value, its default and its paragraph.
enum ConfigurationReference {
    /// The line that starts the generated part; what is above it is written by hand and kept.
    static let marker =
        "<!-- Generated from the key table (Sources/BearerConfig/KeyGroups*.swift) by `swift run bearer-docs`:"
        + " edit the table, not this part. -->"

    /// `handWritten` (the file up to the marker, which it replaces with the reference).
    static func render(keepingAbove handWritten: String) -> String {
        let kept = handWritten.range(of: Self.marker).map { String(handWritten[..<$0.lowerBound]) } ?? handWritten
        var lines = [Self.marker, "", "## Reference", ""]
        lines += wrapped(
            "Every key, by topic. \"Where\" follows from the key's scope: a process-wide key is set outside any"
                + " section; a session key outside any section (for the default session) and in `[session NAME]`"
                + " sections. The same text is in proxy.conf.example and bearer-proxy.conf(5).",
            width: 100
        )
        for group in Configuration.keyGroups {
            if lines.last != "" { lines += [""] }
            lines += ["### \(group.title)", ""]
            if !group.introduction.isEmpty { lines += wrapped(group.introduction, width: 100) + [""] }
            if !group.sample.isEmpty {
                lines +=
                    group.sample.split(separator: "\n", omittingEmptySubsequences: false).map {
                        $0.isEmpty ? "" : "    " + $0
                    } + [""]
            }
            if !group.sampleOutcome.isEmpty { lines += wrapped(group.sampleOutcome, width: 100) + [""] }
            for key in group.keys {
                lines += [
                    "#### `\(key.key.name)`", "",
                    "- where: \(key.key.placement)",
                    "- value: \(key.value)",
                    "- default: \(key.defaultDescription)",
                    "",
                ]
                lines += wrapped(key.paragraph, width: 100) + [""]
            }
        }
        while lines.last == "" { lines.removeLast() }
        return kept + lines.joined(separator: "\n") + "\n"
    }
}
