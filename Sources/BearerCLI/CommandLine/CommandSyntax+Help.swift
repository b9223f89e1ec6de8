extension CommandSyntax {
    /// swift-argument-parser's look: `OVERVIEW:`, `USAGE:`, `OPTIONS:` (and the main help's
    /// `SUBCOMMANDS:`), each entry a label in a 26-column field and its help beside it, `(default: …)`
    /// from the table.
    package var helpText: String {
        var text = "OVERVIEW: \(self.overview)\n\n"
        // The main help shows how each subcommand is called too.
        let usage = ([self] + self.subcommands).flatMap { command in command.usage.map { "\(command.path) \($0)" } }
        text += "USAGE: " + usage.joined(separator: "\n       ") + "\n"
        text += "\nOPTIONS:\n"
        for flag in self.flags {
            text += Self.entry(flag.label, flag.helpLines)
        }
        if !self.subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n"
            for subcommand in self.subcommands {
                let lines = (subcommand.summary ?? "").split(separator: "\n").map(String.init)
                text += Self.entry(subcommand.name ?? "", lines)
            }
        }
        if let discussion = self.discussion {
            text += "\n\(discussion)\n"
        }
        return text
    }

    /// Where help lines start.
    static let helpColumn = 26

    /// `  LABEL` padded to the help column, then the help's lines, each further one indented to the
    /// column; a label too long for its field gets a line of its own.
    static func entry(_ label: String, _ lines: [String]) -> String {
        let indent = String(repeating: " ", count: Self.helpColumn)
        var head = "  " + label
        var rest = lines
        if head.count < Self.helpColumn, let first = rest.first {
            head += String(repeating: " ", count: Self.helpColumn - head.count) + first
            rest.removeFirst()
        }
        return ([head] + rest.map { indent + $0 }).joined(separator: "\n") + "\n"
    }
}
