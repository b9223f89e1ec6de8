import BearerConfig

/// Everything a command's line is made of, in one table: its name, what it does, how it is called,
/// its flags, and what its help says after them. The parser (`ParsedArguments`), the help
/// (`helpText`), the error framing (`errorMessage(_:)`) and the "did you mean" all read it, and so
/// will shell completions.
package struct CommandSyntax: Sendable {
    /// `login`; nil for the proxy itself.
    package var name: String?
    /// The help's first paragraph.
    package var overview: String
    /// How it is called, after `bearer-proxy`; the first line is the one an error repeats.
    package var usage: [String]
    /// In the order the help lists them.
    package var flags: [Flag]
    /// `completions <shell>`: the one argument that is no flag, and what it may be; nil when the
    /// command takes none.
    package var operand: Flag.Value?
    /// `run`: the arguments after its flags (after `--`, or from the first one that is no flag) are
    /// the program to run, and there must be one.
    package var takesProgram = false
    /// The main help's lines about a subcommand, under `SUBCOMMANDS:`.
    package var summary: String?
    /// The subcommands the main help lists (the proxy's syntax only).
    package var subcommands: [CommandSyntax] = []
    /// What the help says after the options (and the subcommands).
    package var discussion: String?

    /// `bearer-proxy login`.
    var path: String { "bearer-proxy" + (self.name.map { " " + $0 } ?? "") }

    /// The flag `argument` names: `--config`, `--config=FILE` (a flag that takes a value), `-h`.
    func flag(named argument: String) -> Flag? {
        let name = argument.hasPrefix("--") ? String(argument.prefix { $0 != "=" }) : argument
        return self.flags.first { flag in
            (flag.name == name && (flag.value != nil || name == argument)) || flag.shortName == argument
        }
    }

    /// `argument`, which is none of this command's flags, as an error naming the flag it was most
    /// likely meant to be: compared by name (`--lisen=x` as `--lisen`), without the dashes (`-check`
    /// is `--check`).
    func unknownOption(_ argument: String) -> CommandLineError {
        let name = argument.prefix { $0 != "=" }.drop { $0 == "-" }
        let names = self.flags.map { String($0.name.drop { $0 == "-" }) }
        return .unknownOption(argument, meant: closestName(to: String(name), among: names).map { "--" + $0 })
    }

    /// `Error: …`, the usage line, and where the help is.
    func errorMessage(_ error: CommandLineError) -> String {
        "Error: \(error.description)\nUsage: \(self.path) \(self.usage[0])\n"
            + "  See '\(self.path) --help' for more information.\n"
    }
}
