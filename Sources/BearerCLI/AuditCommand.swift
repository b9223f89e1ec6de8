import BearerCore
import Glibc

/// `bearer-proxy audit FILE`: an audit log summed up (`AuditSummary`), to see at a glance what a
/// program did with its credential.
enum AuditCommand: Command {
    struct Options: Equatable {
        var file: String
    }

    /// Larger than any audit file a person reads the summary of at once (rotated ones are smaller).
    static let sizeLimit = 1 << 30

    static let syntax = CommandSyntax(
        name: "audit",
        overview: """
            Sum up an audit log (audit_log): per session and host, the requests and their statuses, those \
            the rules refused, waited for a refresh or were replayed; then the refused requests by rule.
            """,
        usage: ["<file>"],
        flags: [.help],
        operand: Flag.Value("file", .file),
        summary: "Sum up an audit log (audit_log = FILE) on one screen."
    )

    static func options(_ arguments: ParsedArguments) throws(CommandLineError) -> Options {
        guard let file = arguments.operand else { throw .missingValue("<file>") }
        return Options(file: file)
    }

    static func run(_ options: Options) -> Int32 {
        let fd = open(options.file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            writeStandardError("Error: \(options.file): cannot open: \(String(cString: strerror(errno)))\n")
            return 1
        }
        defer { close(fd) }
        let bytes: [UInt8]
        do throws(SystemCallError) {
            bytes = try SystemCall.readToEnd(fd, limit: Self.sizeLimit)
        } catch {
            writeStandardError("Error: \(options.file): cannot read: \(error)\n")
            return 1
        }
        let summary = AuditSummary(String(decoding: bytes, as: UTF8.self))
        Console.write("\(options.file): " + summary.text, to: STDOUT_FILENO)
        return 0
    }
}
