import Glibc

/// Where `bearer-proxy login` and `logout` talk to the person: lines to stdout, errors to stderr,
/// each written at once with write(2) (never held in a buffer), so a URL to open reaches a terminal
/// or a pipe before the command starts waiting.
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

    static func write(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
