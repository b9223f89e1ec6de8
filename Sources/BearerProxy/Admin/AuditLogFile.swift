import BearerConfig
import BearerCore
import Glibc

/// Opening the audit log's destination, at start and again on SIGUSR1 (after logrotate moved the file).
///
/// Unlike the access log, an audit file that cannot be opened does not stop the proxy: the file is a
/// record for later, and the programs using the proxy now should not fail for it. It is one warning,
/// and every line meant for it is dropped and counted (`bearer_proxy_audit_lines_dropped_total`) until
/// a SIGUSR1 opens it. A file that stops taking lines (a full disk) is the same: one warning, the
/// first time a line is lost.
enum AuditLogFile {
    /// The sink for `destination` (nil: off); a file is opened for appending, created 0600.
    static func open(_ destination: AccessLogDestination, logger: Logger) -> LogSink? {
        switch destination {
        case .off:
            return nil
        case .standardError:
            // The log's own sink: a line it loses is in the log's drop count and notice.
            return logger.sink
        case .file(let path):
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                logger.warn(
                    "cannot open the audit log; its lines are dropped until SIGUSR1 opens it",
                    ["\(ConfigurationKey.auditLog)": path, "error": String(cString: strerror(errno))]
                )
                // A descriptor that refuses every write: lines are counted as dropped, as for a full
                // disk, and not followed by the log's notice (said once, just now).
                return LogSink(fileDescriptor: -1, whenFirstLosingLines: {})
            }
            return LogSink(fileDescriptor: fd, closesDescriptor: true) {
                logger.warn(
                    "the audit log is not taking lines; they are dropped and counted",
                    ["\(ConfigurationKey.auditLog)": path]
                )
            }
        }
    }
}
