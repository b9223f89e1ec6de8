import BearerConfig

/// A command line read against its command's table (`CommandSyntax`): the one flag parser of the
/// binary. Flags come as `--name value` or `--name=value`; a switch is matched whole (`--check=x`
/// is unknown); an unknown flag is named with the one it was likely meant to be.
package struct ParsedArguments: Sendable {
    /// Each flag given, by its name, with its value, in order.
    private(set) var given: [(name: String, value: String?)] = []
    /// `completions`' `<shell>`: the command's operand, when it takes one.
    package private(set) var operand: String?
    /// `run`'s program and its arguments.
    package private(set) var program: [String] = []
    /// The settings the flags put over the file's, in order, each placed at its flag:
    /// `command line (--listen)`.
    package private(set) var overrides: [ConfigEntry] = []

    package init(_ arguments: [String], for syntax: CommandSyntax) throws(CommandLineError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if syntax.takesProgram && argument == "--" {
                self.program = Array(arguments[index...])
                break
            }
            guard let flag = syntax.flag(named: argument) else {
                if argument.hasPrefix("-") { throw syntax.unknownOption(argument) }
                if syntax.operand != nil && self.operand == nil {
                    self.operand = argument
                    continue
                }
                guard syntax.takesProgram else { throw .unexpectedArgument(argument) }
                // The program, as with `env` and `sudo`: what follows is its own.
                self.program = Array(arguments[(index - 1)...])
                break
            }
            var value: String?
            if let kind = flag.value {
                let inline = argument.firstIndex(of: "=").map { String(argument[argument.index(after: $0)...]) }
                if let inline {
                    value = inline
                } else if index < arguments.count && !(kind.isOptional && arguments[index].hasPrefix("-")) {
                    value = arguments[index]
                    index += 1
                } else if !kind.isOptional {
                    throw .missingValue(flag.name)
                }
            }
            self.given.append((flag.name, value))
            if let setting = flag.setting, let settingValue = setting.value ?? value {
                self.overrides.append(
                    ConfigEntry(key: setting.key, value: settingValue, place: "command line (\(flag.name))")
                )
            }
        }
        if syntax.takesProgram && self.program.isEmpty && !self.isHelp { throw .missingCommand }
    }

    /// Whether `flag` was given.
    package func contains(_ flag: Flag) -> Bool {
        self.given.contains { $0.name == flag.name }
    }

    /// The last value `flag` was given; nil when it was not given, or given only without its
    /// optional value.
    package func value(of flag: Flag) -> String? {
        self.given.last { $0.name == flag.name && $0.value != nil }?.value
    }

    /// `-h` or `--help`.
    package var isHelp: Bool { self.contains(.help) }

}
