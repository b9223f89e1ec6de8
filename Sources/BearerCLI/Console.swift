import BearerCore
import Glibc

/// Where the commands talk to the person: lines to stdout, errors to stderr, each written at once
/// with write(2) (never held in a buffer), so a URL to open reaches a terminal or a pipe before
/// `bearer-proxy login` starts waiting.
struct Console: Sendable {
    let output: Int32
    let errors: Int32

    static let standard = Console(output: STDOUT_FILENO, errors: STDERR_FILENO)

    func say(_ line: String) {
        Self.write(line + "\n", to: self.output)
    }

    /// `Error: …`: one line.
    func fail(_ error: LoginError) {
        Self.write("Error: \(error)\n", to: self.errors)
    }

    /// A closed terminal or pipe loses the line: there is nowhere left to say so.
    static func write(_ text: String, to fd: Int32) {
        try? SystemCall.writeAll(fd, Array(text.utf8))
    }
}

/// Straight to stderr, after what the log has queued (its lines come first, as they were made first).
func writeStandardError(_ text: String) {
    LogSink.standardError.flush()
    Console.write(text, to: STDERR_FILENO)
}
