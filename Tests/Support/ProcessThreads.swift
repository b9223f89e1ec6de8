import Foundation

/// A thread of a running process as /proc shows it: its name, its scheduler state, and how many
/// times it waited.
///
/// What a test may observe of a process from outside without asking it: which threads it started
/// (the proxy's signal thread is its first), whether they wait for an event (`S`: asleep in the
/// kernel) or run (`R`), and whether one waits again and again (a loop backing off) or never (a
/// loop that spins gives up the CPU only when the scheduler takes it).
package struct ProcessThread: Equatable, Sendable {
    package var name: String
    /// The state letter of /proc/PID/task/TID/status: `R` running, `S` asleep, `D` in an uninterruptible wait…
    package var state: Character
    /// How many times it gave up the CPU to wait (`voluntary_ctxt_switches`).
    package var waits: Int

    package var isAsleep: Bool { self.state == "S" }

    /// The threads of process `pid` (`"self"`: this one); none once it has ended.
    package static func all(of pid: String) -> [ProcessThread] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { task in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { return nil }
            // `Key:\tvalue` lines: `Name:\tsignals`, `State:\tS (sleeping)`, `voluntary_ctxt_switches:\t12`.
            var fields: [Substring: Substring] = [:]
            for line in status.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon]] = line[line.index(after: colon)...].drop { $0 == "\t" || $0 == " " }
            }
            guard let name = fields["Name"], let state = fields["State"]?.first,
                let waits = fields["voluntary_ctxt_switches"].flatMap({ Int($0) })
            else { return nil }
            return ProcessThread(name: String(name), state: state, waits: waits)
        }
    }

    /// The threads of the child `pid`.
    package static func all(of pid: Int32) -> [ProcessThread] { Self.all(of: String(pid)) }
}
