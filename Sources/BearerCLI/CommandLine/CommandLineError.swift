/// A command-line mistake; printed as `Error: …`, the command's usage line, and a pointer to its
/// `--help` (`CommandSyntax.errorMessage(_:)`).
package enum CommandLineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A flag the command does not take, and the one it may have been meant to be.
    case unknownOption(String, meant: String? = nil)
    case unexpectedArgument(String)
    case missingValue(String)
    /// `--demo xml`: the argument after `--demo` names its variant.
    case unknownDemo(String)
    /// `completions tcsh`: an operand that is none of its words.
    case unknownChoice(String, of: String, choices: [String])
    /// `bearer-proxy run` with nothing to run.
    case missingCommand

    package var description: String {
        switch self {
        case .unknownOption(let option, let meant):
            "Unknown option '\(option)'\(meant.map { " (did you mean '\($0)'?)" } ?? "")"
        case .unexpectedArgument(let argument): "Unexpected argument '\(argument)'"
        case .missingValue(let option): "Missing value for '\(option)'"
        case .unknownDemo(let name):
            "Unknown demo variant '\(name)': the only one is json (--demo json: a JSON login backend); plain --demo runs OAuth2"
        case .unknownChoice(let given, let what, let choices):
            "Unknown \(what) '\(given)': one of \(choices.joined(separator: ", "))"
        case .missingCommand: "Missing the command to run, after '--'"
        }
    }
}
