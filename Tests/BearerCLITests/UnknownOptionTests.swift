import Testing

@testable import BearerCLI
@testable import BearerConfig

/// A mistyped flag, of the proxy or of a subcommand, is named with the flag it was likely meant to be
/// (`--chek` → `--check`), in the usual framing; and each subcommand's flags, which the suggestion
/// picks from, are the ones it takes and the ones its help and the main help show.
@Suite struct UnknownOptionTests {
    struct Mistake: Sendable, CustomTestStringConvertible {
        var subcommand: Subcommand?
        var arguments: [String]
        var firstLine: String
        var testDescription: String {
            ([self.subcommand?.rawValue].compactMap { $0 } + self.arguments).joined(separator: " ")
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
        Mistake(
            subcommand: .login,
            arguments: ["--sesion", "github"],
            firstLine: "Error: Unknown option '--sesion' (did you mean '--session'?)"
        ),
        Mistake(
            subcommand: .login,
            arguments: ["--no-browse"],
            firstLine: "Error: Unknown option '--no-browse' (did you mean '--no-browser'?)"
        ),
        Mistake(
            subcommand: .logout,
            arguments: ["--sessio=github"],
            firstLine: "Error: Unknown option '--sessio=github' (did you mean '--session'?)"
        ),
        Mistake(
            subcommand: .ca,
            arguments: ["--bundel"],
            firstLine: "Error: Unknown option '--bundel' (did you mean '--bundle'?)"
        ),
        Mistake(
            subcommand: .env,
            arguments: ["--lisen", "x"],
            firstLine: "Error: Unknown option '--lisen' (did you mean '--listen'?)"
        ),
        Mistake(
            subcommand: .run,
            arguments: ["--admin-lsten", "x", "--", "true"],
            firstLine: "Error: Unknown option '--admin-lsten' (did you mean '--admin-listen'?)"
        ),
    ]

    @Test(arguments: Self.mistakes)
    func anUnknownFlagNamesTheFlagMeant(_ mistake: Mistake) throws {
        let error = try #require(Self.error(parsing: mistake), "\(mistake.arguments) parsed")
        guard let subcommand = mistake.subcommand else {
            #expect(
                error.fullMessage
                    == "\(mistake.firstLine)\n\(CommandLineOptions.usageLine)\n  See 'bearer-proxy --help' for more information.\n"
            )
            return
        }
        #expect(
            subcommand.fullMessage(error)
                == "\(mistake.firstLine)\n\(subcommand.usageLine)\n  See 'bearer-proxy \(subcommand.rawValue) --help' for more information.\n"
        )
    }

    static func error(parsing mistake: Mistake) -> CommandLineError? {
        do throws(CommandLineError) {
            if let subcommand = mistake.subcommand {
                _ = try subcommand.parse(mistake.arguments)
            } else {
                _ = try CommandLineOptions.parse(mistake.arguments)
            }
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

    /// What the suggestion picks from is what the parser takes.
    @Test(arguments: Subcommand.allCases)
    func everyFlagOfASubcommandIsOneItTakes(_ subcommand: Subcommand) {
        for flag in subcommand.flags {
            let command = subcommand == .run ? ["--", "true"] : []
            do throws(CommandLineError) {
                _ = try subcommand.parse([flag] + command)
            } catch {
                #expect(error == .missingValue(flag), "\(subcommand.rawValue) \(flag): \(error)")
            }
        }
    }

    /// A subcommand's help lists exactly the flags it takes.
    @Test(arguments: Subcommand.allCases)
    func aSubcommandsHelpListsItsFlags(_ subcommand: Subcommand) {
        let listed = subcommand.helpText.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  -") else { return nil }
            return line.dropFirst(2).split(separator: " ").first.map { $0 == "-h," ? "--help" : String($0) }
        }
        #expect(Set(listed) == Set(subcommand.flags), "\(subcommand.rawValue)")
    }

    /// The main help's usage line of each subcommand shows every flag it takes, or says `[<options>]`:
    /// `login` and `logout` once lacked `--session`.
    @Test(arguments: Subcommand.allCases)
    func theMainHelpShowsEachSubcommandsFlags(_ subcommand: Subcommand) throws {
        let line = try #require(
            CommandLineOptions.helpText.split(separator: "\n").first {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("bearer-proxy \(subcommand.rawValue) ")
                    || $0.hasPrefix("USAGE: bearer-proxy \(subcommand.rawValue) ")
            }
        )
        guard !line.contains("[<options>]") else { return }
        for flag in subcommand.flags where flag != "--help" {
            #expect(line.contains(flag), "the main help's \(subcommand.rawValue) line lacks \(flag): \(line)")
        }
    }
}
