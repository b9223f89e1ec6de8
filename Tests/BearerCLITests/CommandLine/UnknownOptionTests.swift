import Testing

@testable import BearerCLI
@testable import BearerConfig

/// A mistyped flag, of the proxy or of a subcommand, is named with the flag it was likely meant to be
/// (`--chek` → `--check`), in the usual framing; and each subcommand's flags, which the suggestion
/// picks from, are the ones it takes and the ones its help and the main help show.
@Suite struct UnknownOptionTests {
    /// Every subcommand's name, for the tests that go through them all.
    static let subcommandNames = subcommands.compactMap { $0.syntax.name }

    /// The table of the subcommand `name`, or the proxy's.
    static func syntax(_ name: String?) -> CommandSyntax {
        name.flatMap { name in subcommands.first { $0.syntax.name == name }?.syntax } ?? ProxyCommand.syntax
    }

    struct Mistake: Sendable, CustomTestStringConvertible {
        var subcommand: String?
        var arguments: [String]
        var firstLine: String
        var testDescription: String {
            ([self.subcommand].compactMap { $0 } + self.arguments).joined(separator: " ")
        }
    }

    static let mistakes: [Mistake] = [
        Mistake(arguments: ["--chek"], firstLine: "Error: Unknown option '--chek' (did you mean '--check'?)"),
        Mistake(arguments: ["-check"], firstLine: "Error: Unknown option '-check' (did you mean '--check'?)"),
        Mistake(arguments: ["--listn=x"], firstLine: "Error: Unknown option '--listn=x' (did you mean '--listen'?)"),
        Mistake(
            arguments: ["--upstram", "x"],
            firstLine: "Error: Unknown option '--upstram' (did you mean '--upstream'?)"
        ),
        Mistake(arguments: ["--hlep"], firstLine: "Error: Unknown option '--hlep' (did you mean '--help'?)"),
        // Another word, not a slip: nothing is offered (not --demo).
        Mistake(arguments: ["--debug"], firstLine: "Error: Unknown option '--debug'"),
        // A switch takes no value, the proxy's as a subcommand's.
        Mistake(arguments: ["--check=yes"], firstLine: "Error: Unknown option '--check=yes' (did you mean '--check'?)"),
        Mistake(
            subcommand: "login",
            arguments: ["--sesion", "github"],
            firstLine: "Error: Unknown option '--sesion' (did you mean '--session'?)"
        ),
        Mistake(
            subcommand: "login",
            arguments: ["--no-browse"],
            firstLine: "Error: Unknown option '--no-browse' (did you mean '--no-browser'?)"
        ),
        Mistake(
            subcommand: "logout",
            arguments: ["--sessio=github"],
            firstLine: "Error: Unknown option '--sessio=github' (did you mean '--session'?)"
        ),
        Mistake(
            subcommand: "ca",
            arguments: ["--bundel"],
            firstLine: "Error: Unknown option '--bundel' (did you mean '--bundle'?)"
        ),
        Mistake(
            subcommand: "env",
            arguments: ["--lisen", "x"],
            firstLine: "Error: Unknown option '--lisen' (did you mean '--listen'?)"
        ),
        Mistake(
            subcommand: "run",
            arguments: ["--admin-lsten", "x", "--", "true"],
            firstLine: "Error: Unknown option '--admin-lsten' (did you mean '--admin-listen'?)"
        ),
    ]

    @Test(arguments: Self.mistakes)
    func anUnknownFlagNamesTheFlagMeant(_ mistake: Mistake) throws {
        let syntax = Self.syntax(mistake.subcommand)
        let error = try #require(Self.error(parsing: mistake.arguments, syntax), "\(mistake.arguments) parsed")
        let command = "bearer-proxy" + (mistake.subcommand.map { " " + $0 } ?? "")
        #expect(
            syntax.errorMessage(error)
                == "\(mistake.firstLine)\nUsage: \(command) \(syntax.usage[0])\n  See '\(command) --help' for more information.\n"
        )
    }

    static func error(parsing arguments: [String], _ syntax: CommandSyntax) -> CommandLineError? {
        do throws(CommandLineError) {
            _ = try ParsedArguments(arguments, for: syntax)
            return nil
        } catch {
            return error
        }
    }

    /// The rule config keys and flags share: a slip of a few edits (a swap of neighbours is one),
    /// never another word.
    @Test(
        arguments: [
            ("chek", "check"), ("hlep", "help"), ("scpoe", "scope"), ("upstrem", "upstream"), ("lisen", "listen"),
            ("debug", nil), ("foo", nil), ("x", nil),
        ] as [(String, String?)]
    )
    func theClosestNameIsASlipAway(_ typed: String, _ meant: String?) {
        let names = ["check", "help", "scope", "upstream", "listen", "demo", "config"]
        #expect(closestName(to: typed, among: names) == meant)
    }

    /// Every flag of every command is taken by its parser: alone, or asking for its value.
    @Test(arguments: [nil] + Self.subcommandNames)
    func everyFlagOfACommandIsOneItTakes(_ name: String?) {
        let syntax = Self.syntax(name)
        for flag in syntax.flags {
            let program = syntax.takesProgram ? ["--", "true"] : []
            do throws(CommandLineError) {
                _ = try ParsedArguments([flag.name] + program, for: syntax)
            } catch {
                #expect(error == .missingValue(flag.name), "\(name ?? "bearer-proxy") \(flag.name): \(error)")
            }
        }
    }

    /// A command's help lists exactly the flags it takes.
    @Test(arguments: [nil] + Self.subcommandNames)
    func aCommandsHelpListsItsFlags(_ name: String?) {
        let syntax = Self.syntax(name)
        let options = syntax.helpText.split(separator: "\n\n").first { $0.hasPrefix("OPTIONS:") } ?? ""
        let listed = options.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  -") else { return nil }
            return line.dropFirst(2).split(separator: " ").first.map { $0 == "-h," ? "--help" : String($0) }
        }
        #expect(listed == syntax.flags.map(\.name), "\(name ?? "bearer-proxy")")
    }

    /// The main help's usage line of each subcommand shows every flag it takes, or says `[<options>]`:
    /// `login` and `logout` once lacked `--session`.
    @Test(arguments: Self.subcommandNames)
    func theMainHelpShowsEachSubcommandsFlags(_ name: String) throws {
        let line = try #require(
            ProxyCommand.syntax.helpText.split(separator: "\n").first {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("bearer-proxy \(name) ")
                    || $0.hasPrefix("USAGE: bearer-proxy \(name) ")
            }
        )
        guard !line.contains("[<options>]") else { return }
        for flag in Self.syntax(name).flags where flag != .help {
            #expect(line.contains(flag.name), "the main help's \(name) line lacks \(flag.name): \(line)")
        }
    }
}
