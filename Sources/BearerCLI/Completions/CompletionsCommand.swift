import Glibc

/// `bearer-proxy completions bash|zsh|fish`: prints the shell's completion script, made from the
/// commands' tables (`CommandSyntax`), so that what a shell offers is what the parser takes. The
/// package installs each script where its shell looks; by hand: `source <(bearer-proxy completions
/// bash)`.
enum CompletionsCommand: Command {
    struct Options: Equatable {
        var shell: CompletionScript.Shell
    }

    static let shells = CompletionScript.Shell.allCases.map(\.rawValue)

    static let syntax = CommandSyntax(
        name: "completions",
        overview: "Print the completion script of a shell: bash, zsh or fish.",
        usage: ["<shell>"],
        flags: [.help],
        operand: Flag.Value("shell", .choice(Self.shells)),
        summary: """
            Print a completion script for bash, zsh or fish, e.g.
            source <(bearer-proxy completions bash).
            """
    )

    static func options(_ arguments: ParsedArguments) throws(CommandLineError) -> Options {
        guard let name = arguments.operand else { throw .missingValue("<shell>") }
        guard let shell = CompletionScript.Shell(rawValue: name) else {
            throw .unknownChoice(name, of: "<shell>", choices: Self.shells)
        }
        return Options(shell: shell)
    }

    static func run(_ options: Options) -> Int32 {
        Console.write(CompletionScript(ProxyCommand.syntax).text(for: options.shell), to: STDOUT_FILENO)
        return 0
    }
}
