import Foundation

/// A thread of a running process as /proc shows it: its name and its scheduler state.
///
/// What a test may observe of a process from outside without asking it: which threads it started
/// (the proxy's signal thread is its first), and whether they wait for an event (`S`: asleep in the
/// kernel) or run (`R`): a loop that spins is never found asleep.
package struct ProcessThread: Equatable, Sendable {
    package var name: String
    /// The state letter of /proc/PID/task/TID/stat: `R` running, `S` asleep, `D` in an uninterruptible wait…
    package var state: Character

    package var isAsleep: Bool { self.state == "S" }

    /// The threads of process `pid` (`"self"`: this one); none once it has ended.
    package static func all(of pid: String) -> [ProcessThread] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { task in
            // `TID (NAME) STATE …`: a name may hold ") ", so it ends at the last one.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.range(of: ") ", options: .backwards),
                let state = stat[close.upperBound...].first
            else { return nil }
            return ProcessThread(name: String(stat[stat.index(after: open)..<close.lowerBound]), state: state)
        }
    }

    /// The threads of the child `pid`.
    package static func all(of pid: Int32) -> [ProcessThread] { Self.all(of: String(pid)) }
}
