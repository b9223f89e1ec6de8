import BearerCore
import Glibc

/// A command of the `bearer-proxy` binary: the proxy itself (`ProxyCommand`) and each subcommand.
/// Its line is one table (`syntax`); `main` parses it, answers `--help` and mistakes the same way for
/// every command, and runs it with its options.
protocol Command {
    /// What the command line asked of it.
    associatedtype Options

    static var syntax: CommandSyntax { get }

    /// Whether it runs a proxy, whose `SignalWatcher` takes the signals; the other commands end at
    /// once on Ctrl-C or SIGTERM.
    static var watchesSignals: Bool { get }

    /// The options `arguments` give (values checked here that the config loader does not check).
    static func options(_ arguments: ParsedArguments) throws(CommandLineError) -> Options

    /// Does what the options ask; returns the exit status.
    static func run(_ options: Options) -> Int32
}

extension Command {
    static var watchesSignals: Bool { false }

    /// `arguments` (after the command's name) read against the table.
    static func parse(_ arguments: [String]) throws(CommandLineError) -> Options {
        try Self.options(ParsedArguments(arguments, for: Self.syntax))
    }

    /// Parses `arguments`, prints the help (stdout, exit 0) or the mistake (stderr, exit 1), or runs.
    static func main(_ arguments: [String]) -> Int32 {
        if !Self.watchesSignals { SignalWatcher.letStopSignalsEndTheProcess() }
        let options: Options
        do throws(CommandLineError) {
            let parsed = try ParsedArguments(arguments, for: Self.syntax)
            if parsed.isHelp {
                Console.write(Self.syntax.helpText, to: STDOUT_FILENO)
                return 0
            }
            options = try Self.options(parsed)
        } catch {
            writeStandardError(Self.syntax.errorMessage(error))
            return 1
        }
        return Self.run(options)
    }
}

/// The subcommands, each named by the first argument.
var subcommands: [any Command.Type] {
    [
        LoginCommand.self, LogoutCommand.self, CACommand.self, EnvCommand.self, RunCommand.self, AuditCommand.self,
        CompletionsCommand.self,
    ]
}

/// `bearer-proxy`: the subcommand the first argument names, else the proxy itself. The executable's
/// main.swift calls this.
package func bearerProxyMain() -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    let arguments = Array(CommandLine.arguments.dropFirst())
    if let name = arguments.first, let command = subcommands.first(where: { $0.syntax.name == name }) {
        return command.main(Array(arguments.dropFirst()))
    }
    return ProxyCommand.main(arguments)
}
