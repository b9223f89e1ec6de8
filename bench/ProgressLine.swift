import Foundation
import Glibc

/// One line on the terminal, rewritten in place while a scenario runs (which one, how far, how fast
/// so far), so a long run shows it is alive. Nothing when stderr is not a terminal: logs stay clean.
final class ProgressLine {
    let isEnabled: Bool

    init(isEnabled: Bool = isatty(STDERR_FILENO) == 1) {
        self.isEnabled = isEnabled
    }

    func show(_ text: String) {
        guard self.isEnabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }

    func clear() {
        guard self.isEnabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    /// `steady, round 2 of 3: 3.5 s of 5 s, 41,203 req/s so far`.
    static func text(
        label: String,
        phase: LoadGenerator.Phase,
        elapsed: Duration,
        of total: Duration,
        completed: Int
    )
        -> String
    {
        switch phase {
        case .warmup:
            return "\(label): warming up, \(format(elapsed.seconds, 1)) s of \(formatSeconds(total))"
        case .measuring:
            let rate = elapsed.seconds > 0 ? Double(completed) / elapsed.seconds : 0
            return
                "\(label): \(format(elapsed.seconds, 1)) s of \(formatSeconds(total)), \(grouped(rate)) req/s so far"
        }
    }
}
