import BearerTestSupport
import Foundation
import Testing

@testable import BearerCLI

/// `bearer-proxy completions SHELL`: the scripts made from the flag tables, tried in the shells.
/// bash completes for real (the function called with `COMP_WORDS`/`COMP_CWORD` as bash sets them);
/// zsh and fish check that their scripts parse.
@Suite struct CompletionsTests {
    /// What bash offers for `words`, the cursor at the end of the last one, in `directory`.
    static func bashCompletions(_ words: [String], in directory: String) throws -> [String] {
        let script = CompletionScript(ProxyCommand.syntax).text(for: .bash)
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let outcome = try runProgram(
            [
                ExternalTool.bash.program, "-c",
                script + "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _bearer_proxy; "
                    + #"printf '%s\n' "${COMPREPLY[@]}""#,
            ],
            in: directory,
            environment: ["HOME": directory, "PATH": "/usr/bin:/bin"],
            timeout: .seconds(20)
        )
        #expect(outcome.status == 0, "\(outcome.standardError)")
        return outcome.standardOutput.split(separator: "\n").map(String.init).sorted()
    }

    @Test(.requires(ExternalTool.bash)) func bashCompletesSubcommandsFlagsAndValues() throws {
        let directory = try ScratchSpace.newDirectory("completions")
        try "upstream = http://127.0.0.1:1\n[session billing]\n".write(
            toFile: "\(directory)/proxy.conf",
            atomically: false,
            encoding: .utf8
        )
        try "".write(toFile: "\(directory)/notes.txt", atomically: false, encoding: .utf8)
        #expect(
            try Self.bashCompletions(["bearer-proxy", ""], in: directory)
                == ["audit", "ca", "completions", "env", "login", "logout", "run"]
        )
        #expect(try Self.bashCompletions(["bearer-proxy", "--con"], in: directory) == ["--config"])
        #expect(try Self.bashCompletions(["bearer-proxy", "--log-level", "w"], in: directory) == ["warn"])
        #expect(try Self.bashCompletions(["bearer-proxy", "--config", "pro"], in: directory) == ["proxy.conf"])
        #expect(try Self.bashCompletions(["bearer-proxy", "login", "--se"], in: directory) == ["--session"])
        #expect(
            try Self.bashCompletions(
                ["bearer-proxy", "login", "--config", "\(directory)/proxy.conf", "--session", ""],
                in: directory
            ) == ["billing"]
        )
        #expect(
            try Self.bashCompletions(["bearer-proxy", "completions", ""], in: directory) == ["bash", "fish", "zsh"]
        )
    }

    @Test(.requires(ExternalTool.zsh)) func theZshScriptParses() throws {
        try Self.expectParses(.zsh, with: ExternalTool.zsh.program)
    }

    @Test(.requires(ExternalTool.fish)) func theFishScriptParses() throws {
        try Self.expectParses(.fish, with: ExternalTool.fish.program)
    }

    static func expectParses(_ shell: CompletionScript.Shell, with program: String) throws {
        let path = try ScratchSpace.newPath("completion.\(shell.rawValue)")
        try CompletionScript(ProxyCommand.syntax).text(for: shell).write(
            toFile: path,
            atomically: false,
            encoding: .utf8
        )
        let outcome = try runProgram([program, "-n", path], timeout: .seconds(20))
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError.isEmpty)
    }

    @Test func theCommandTakesOneOfTheThreeShells() throws {
        #expect(try CompletionsCommand.parse(["fish"]) == .init(shell: .fish))
        #expect(throws: CommandLineError.unknownChoice("tcsh", of: "<shell>", choices: ["bash", "zsh", "fish"])) {
            try CompletionsCommand.parse(["tcsh"])
        }
        #expect(throws: CommandLineError.missingValue("<shell>")) { try CompletionsCommand.parse([]) }
        #expect(throws: CommandLineError.unexpectedArgument("zsh")) { try CompletionsCommand.parse(["bash", "zsh"]) }
    }
}
