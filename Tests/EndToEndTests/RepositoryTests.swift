import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// What a clone holds, as its README promises.
@Suite struct RepositoryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The README's test command runs `swift test --disable-xctest`: an XCTest case would never run, and
    /// would count as passed. Every test is a Swift Testing test.
    @Test func noTestUsesXCTest() throws {
        let tests = Self.root.appendingPathComponent("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20, "the Tests folder was not found at \(tests.path)")
        for file in files {
            let lines = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n")
            let importsXCTest = lines.contains { $0.trimmingCharacters(in: .whitespaces).hasSuffix("import XCTest") }
            #expect(!importsXCTest, "\(file) imports XCTest, which `--disable-xctest` never runs")
        }
    }

    /// Every Swift file under `Sources`, by its path from `Sources`, with its text.
    static func sourceFiles() throws -> [(path: String, text: String)] {
        let sources = Self.root.appendingPathComponent("Sources")
        let paths = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        return try paths.map { ($0, try String(contentsOf: sources.appendingPathComponent($0), encoding: .utf8)) }
    }

    /// The installed binary links FoundationEssentials, never Foundation: Foundation brings ICU, which
    /// took the static binary from 17 MB to 62 MB when discovery's JSON came in through
    /// `JSONSerialization` (JSONText reads and writes JSON without it). Only the docs generator,
    /// which is not installed, may import it.
    @Test func noInstalledModuleImportsFoundation() throws {
        let importsFoundation = /^\s*(@\w+\s+)*import\s+((struct|class|enum|func|var|let)\s+)?Foundation(\.|\s*$)/
        let offenders = try Self.sourceFiles().filter { file in
            !file.path.hasPrefix("BearerDocs/") && !file.path.hasPrefix("bearer-docs/")
                && file.text.split(separator: "\n").contains { $0.wholeMatch(of: importsFoundation) != nil }
        }
        #expect(offenders.map(\.path) == [])
    }

    /// Nothing waits by sleeping and looking again: a drain waits for its last connection to close, a
    /// child's end is a pidfd (or a waitid thread), a mock server's loops signal, the log's flush is
    /// told when the queue is empty. Two sleeps are no wait for an event: the log writer's gathering
    /// pause (lines that come meanwhile join one write) and the device login's interval (RFC 8628:
    /// the authorization server sets the pace of the polls).
    @Test func nothingInSourcesSleepsToWaitForAnEvent() throws {
        let deliberate = ["usleep(Self.gatheringMicroseconds)", "let result = nanosleep(&request, &remaining)"]
        let files = try Self.sourceFiles()
        #expect(files.count > 100, "the Sources folder was not found")
        for (path, text) in files {
            for line in text.split(separator: "\n") {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), code.contains("sleep(") else { continue }
                #expect(deliberate.contains(code), "\(path): \(code)")
            }
        }
    }

    /// Every Swift file under `Tests`, by its path from `Tests`, with its text; this file, which names
    /// what it looks for, is left out.
    static func testFiles() throws -> [(path: String, text: String)] {
        let tests = Self.root.appendingPathComponent("Tests")
        let paths = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasSuffix("/RepositoryTests.swift") }
        return try paths.map { ($0, try String(contentsOf: tests.appendingPathComponent($0), encoding: .utf8)) }
    }

    /// No test sleeps, in Swift or in the Python it runs: it waits for the event the pause stood in
    /// for (a file, a child's exit, a port that accepts, a timer on a manual clock). `waitUntil`, the
    /// bounded wait for such an event, is the one place that looks again after a pause.
    @Test func noTestSleeps() throws {
        let files = try Self.testFiles()
        #expect(files.count > 100, "the Tests folder was not found")
        for (path, text) in files where path != "Support/WaitUntil.swift" {
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), code.contains("sleep(") else { continue }
                Issue.record("\(path):\(index + 1) sleeps: \(code)")
            }
        }
    }

    /// No test waits for a log line: it waits for what makes the line (a response, a token call,
    /// `/status`, a refused connection, the process's exit), and reads the log once it is complete
    /// (the binary's stderr after it exited; in process, lines logged before the event waited for).
    /// Two outputs are the program's interface, not its log, and may be waited for: the ready line
    /// (`listening on ADDR`) and a prompt (login's `Password for …: `). A wait is a `waitUntil` or a
    /// `while` loop; what it reads is the block that starts on its line.
    @Test func noTestWaitsForALogLine() throws {
        // Simple word boundaries: Unicode's (the default) make one word of `log.withLock`.
        let readsTheLog = #/standardError|stderr|capturedLines|\blogs?\b|accessLog|access\.log/#
            .wordBoundaryKind(.simple)
        let interface = ["listening on ", "Password for "]
        let wait = #/\bwaitUntil\b\s*[({]|\bwhile\s/#
        for (path, text) in try Self.testFiles() {
            for match in text.matches(of: wait) {
                guard let block = Self.block(startingAt: match.range.lowerBound, in: text),
                    block.contains(readsTheLog), !interface.contains(where: block.contains)
                else { continue }
                let line = text[..<match.range.lowerBound].filter { $0 == "\n" }.count + 1
                Issue.record("\(path):\(line) waits for a log line: \(block.split(separator: "\n")[0])")
            }
        }
    }

    /// The text from `start` to the brace that closes the first one opened on `start`'s line; nil when
    /// none opens there (a `while` of a Python snippet).
    static func block(startingAt start: String.Index, in text: String) -> Substring? {
        let lineEnd = text[start...].firstIndex(of: "\n") ?? text.endIndex
        guard let open = text[start..<lineEnd].firstIndex(of: "{") else { return nil }
        var depth = 0
        for index in text[open...].indices {
            switch text[index] {
            case "{": depth += 1
            case "}":
                depth -= 1
                if depth == 0 { return text[start...index] }
            default: continue
            }
        }
        return nil
    }

    /// One command-line parser: only BearerCLI's CommandLine folder reads the arguments or looks for
    /// a flag's dashes (the proxy's flags and each subcommand's were parsed by two parsers once).
    @Test func oneFlagParserInSources() throws {
        for (path, text) in try Self.sourceFiles() where !path.hasPrefix("BearerCLI/CommandLine/") {
            #expect(!text.contains("CommandLine.arguments"), "\(path) reads the command line")
            #expect(!text.contains(#"hasPrefix("-"#), "\(path) looks for a flag")
        }
    }

    /// A user holds only the clone: the README points at nothing outside it.
    @Test func theReadmePointsAtNothingOutsideTheClone() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(!readme.contains("../"), "the README names a path outside the repository")
    }

    /// A test skipped for a missing tool takes its reason from `ExternalTool`, which names what it
    /// checked (the path, the interpreter) and the package: a reason written at the test drifts from the
    /// check beside it ("needs Debian's python3-requests" did not say which python3 was asked).
    @Test func everySkipForAMissingToolTakesItsReasonFromExternalTool() throws {
        let tests = Self.root.appendingPathComponent("Tests")
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }
            // ExternalTool is where the reasons are written, now that the test support lives under Tests.
            .filter {
                $0.hasSuffix(".swift") && !$0.hasSuffix("RepositoryTests.swift") && $0 != "Support/ExternalTool.swift"
            }
        #expect(files.count > 20, "the Tests folder was not found at \(tests.path)")
        for file in files {
            let text = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let code = line.trimmingCharacters(in: .whitespaces)
                let writesAReason = code.hasPrefix(#""needs "#) || code.contains(#", "needs "#)
                #expect(!writesAReason, "\(file): \(code)")
            }
        }
    }

    /// `.ci/test`, the README's test command, ends its ~2,700 lines with one line counting the skipped
    /// tests by reason, and exits with swift test's status. Shown with a stand-in `swift` on PATH that
    /// prints what Swift Testing prints (lines copied from a real run) and exits as told.
    @Test(arguments: [
        (0, [] as [String], "skipped: 0"),
        (
            1,
            [
                #"➜ Suite S skipped: "needs redis-server on PATH or in /usr/bin, /usr/sbin, /usr/local/bin (apt-get install redis-server)""#,
                #"➜ Test c() skipped: "needs /usr/bin/python3 with the websockets module (apt-get install python3-websockets)""#,
                "➜ Test d() skipped.",
                #"➜ Test a() skipped: "needs redis-server on PATH or in /usr/bin, /usr/sbin, /usr/local/bin (apt-get install redis-server)""#,
                #"➜ Test b() skipped: "needs redis-server on PATH or in /usr/bin, /usr/sbin, /usr/local/bin (apt-get install redis-server)""#,
            ],
            "skipped: 4 (needs /usr/bin/python3 with the websockets module (apt-get install python3-websockets): 1,"
                + " no reason given: 1, needs redis-server on PATH or in /usr/bin, /usr/sbin, /usr/local/bin (apt-get install redis-server): 2)"
        ),
    ])
    func theTestCommandEndsWithTheSkipCountAndKeepsTheStatus(status: Int32, skips: [String], summary: String) throws {
        let output =
            ["◇ Test run started.", "✔ Test skipsVerificationWhenToldAndWarns() passed after 0.1 seconds."] + skips
            + ["━ Test run with 7 tests in 3 suites passed after 0.001 seconds with 2 known issues."]
        let script = """
            #!/bin/sh
            echo "swift $*"
            cat <<'OUT'
            \(output.joined(separator: "\n"))
            OUT
            exit \(status)

            """
        let outcome = try Self.runTestCommand(swift: script, temporary: try ScratchSpace.newDirectory("tmp"))
        let text = outcome.standardOutput
        #expect(outcome.status == status, "the tests' status is lost: \(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "swift test --disable-xctest --filter SomeSuite")
        #expect(Array(lines.dropFirst().dropLast()) == output, "the run's output is passed through as it is")
        #expect(lines.last == summary)
    }

    /// `.ci/test` runs the tests with a fresh TMPDIR of its own (inside the one it was given),
    /// fails naming each `bearer*` entry left in it (not SwiftPM's `TemporaryDirectory.*`), and
    /// removes it. Shown with a stand-in `swift` that leaves a file and a locked folder behind.
    @Test func theTestCommandFailsNamingWhatTheTestsLeftInTMPDIRAndRemovesIt() throws {
        let temporary = try ScratchSpace.newDirectory("tmp")
        let script = """
            #!/bin/sh
            echo "$TMPDIR" > "$TMPDIR/../seen"
            touch "$TMPDIR/bearer-e2e-1-2.sock" "$TMPDIR/TemporaryDirectory.aBc123" "$TMPDIR/other"
            mkdir "$TMPDIR/bearer-login-3-4" && touch "$TMPDIR/bearer-login-3-4/refresh_token"
            chmod 500 "$TMPDIR/bearer-login-3-4"
            echo "✔ Test run with 1 test in 1 suite passed after 0.001 seconds."

            """
        let outcome = try Self.runTestCommand(swift: script, temporary: temporary)
        #expect(outcome.status == 1, "leftovers fail a passing run: \(outcome.standardError)")
        #expect(
            outcome.standardError == """
                Error: the tests left 2 bearer* entries in TMPDIR (now removed):
                    bearer-e2e-1-2.sock
                    bearer-login-3-4

                """
        )
        let seen = try String(contentsOfFile: temporary + "/seen", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        #expect(seen.hasPrefix(temporary + "/bearer-test-"), "the tests' TMPDIR is a fresh one: \(seen)")
        #expect(!FileManager.default.fileExists(atPath: seen), "the tests' TMPDIR is removed afterwards")
    }

    /// Runs `.ci/test --filter SomeSuite` with `swift` on PATH standing in for the real one, and
    /// `temporary` as its TMPDIR.
    static func runTestCommand(swift script: String, temporary: String) throws -> ProgramOutcome {
        let bin = try ScratchSpace.newDirectory("ci")
        // Written through a close-on-exec descriptor: a child another test spawns meanwhile must not
        // keep it open for writing, or running the script fails with 'text file busy' (status 126).
        try AtomicFile.writeFlushed(Array(script.utf8), to: bin + "/swift", mode: 0o755)
        return try runProgram(
            [Self.root.appendingPathComponent(".ci/test").path, "--filter", "SomeSuite"],
            environment: ["PATH": "\(bin):/usr/bin:/bin", "TMPDIR": temporary],
            timeout: .seconds(60)
        )
    }

    /// The README's first configs, a static token and an OAuth2 client, each run as a reader would:
    /// its shell lines (`cat > proxy.conf <<'EOF'` … `export VAR=…`), then the README's `--check` line
    /// with the built binary. Both pass, warning only about the placeholder hosts.
    @Test func theReadmesFirstConfigsPassTheCheckAsShown() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "## Run and test\n"))
        let end = try #require(readme.range(of: "\n## ", range: start.upperBound..<readme.endIndex))
        // The indented blocks, each a list of its lines.
        var blocks: [[String]] = [[]]
        for line in readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("    ") {
                blocks[blocks.count - 1].append(String(line.dropFirst(4)))
            } else if !blocks[blocks.count - 1].isEmpty {
                blocks.append([])
            }
        }
        let configs = blocks.filter { $0.first == "cat > proxy.conf <<'EOF'" }
        let checkLine = try #require(blocks.joined().first { $0.contains("bearer-proxy --check --config proxy.conf") })
        let check = try #require(checkLine.split(separator: "#").first).replacingOccurrences(
            of: "swift run -c release bearer-proxy",
            with: ProxyProcess.binaryURL.path
        )
        #expect(configs.count == 2, "a static token and an OAuth2 client: \(configs.count)")
        for (config, shown) in zip(configs, ["access_token = <redacted>", "grant_type = client_credentials"]) {
            let folder = temporaryDirectory()
            let outcome = try runProgram(
                ["/bin/sh", "-eu", "-c", (config + [check]).joined(separator: "\n")],
                in: folder,
                environment: ["PATH": "/usr/bin:/bin", "HOME": folder],
                timeout: .seconds(30)
            )
            #expect(outcome.status == 0, "\(config): \(outcome.standardError)")
            #expect(outcome.standardOutput.contains("\n\(shown)\n"), "\(config)")
            let lines = outcome.standardError.split(separator: "\n")
            #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("Warning: ") && $0.contains("is a placeholder") })
        }
    }

    /// The README quotes the test command's last two lines as a run prints them: Swift Testing's
    /// summary, with as many known issues as the tests plant (`withKnownIssue`), and the skip count,
    /// whose reasons are those `ExternalTool` gives (they once said "needs Debian's python3-requests",
    /// naming no interpreter, under a summary that no run printed any more).
    @Test func theReadmeQuotesTheTestRunsLastLines() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let quoted = readme.split(separator: "\n").filter { $0.hasPrefix("    ") }.map { $0.dropFirst(4) }
        let summary = try #require(quoted.first { $0.hasPrefix("━ Test run with ") })
        let match = try #require(
            summary.wholeMatch(
                of: #/━ Test run with \d+ tests in \d+ suites passed after [\d.]+ seconds with (\d+) known issues\./#
            )
        )
        var planted = 0
        for file in try #require(FileManager.default.enumerator(atPath: Self.root.appendingPathComponent("Tests").path))
            .compactMap({ $0 as? String }) where file.hasSuffix(".swift")
        {
            let text = try String(contentsOf: Self.root.appendingPathComponent("Tests/" + file), encoding: .utf8)
            planted +=
                text.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces) == "withKnownIssue {" }
                .count
        }
        #expect(Int(match.1) == planted, "the tests plant \(planted) known issues")
        let skipped = try #require(quoted.first { $0.hasPrefix("skipped: ") })
        for tool in [ExternalTool.redisServer, .pythonRequests, .pythonWebSockets] {
            #expect(skipped.contains("\(tool.skipReason): "), "\(skipped) lacks \(tool.skipReason)")
        }
    }

    /// CI builds once and runs the test command once; the README documents that command.
    @Test func ciRunsTheTestCommandThatTheReadmeDocuments() throws {
        let run = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        // A step's command, without the `step` that times it.
        let commands = run.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            line.hasPrefix("step ") ? line.dropFirst(5) : line
        }
        #expect(commands.filter { $0.contains("swift build -c release") }.count == 1)
        #expect(commands.filter { $0 == ".ci/test" }.count == 1)
        #expect(!commands.contains { $0.contains("swift test") }, "swift test runs once, through .ci/test")
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("    .ci/test "))
        #expect(readme.contains("`skipped: 0`"))
    }
}
