import Foundation
import Testing

/// Where a scenario of the test world runs. `.memory`: one stepped loop on a manual clock, the
/// in-memory network, blocking work run when the loop settles — no socket, no other thread, no
/// wall-clock time, the same order on every machine. `.live`: the kernel's loopback sockets, the
/// proxy's own loops and the mocks' shared ones, real time. A scenario is written once and runs in
/// both (`@Test(arguments: WorldBackend.chosen)`), as HummingbirdTesting's `.router` and `.live`.
enum WorldBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case live

    var testDescription: String { self.rawValue }

    /// The backends the scenarios run in: both, or those `BEARER_WORLD` names (`memory`, `live`,
    /// comma-separated), to run one backend only.
    static let chosen: [WorldBackend] = {
        guard let names = ProcessInfo.processInfo.environment["BEARER_WORLD"], !names.isEmpty else {
            return allCases
        }
        let chosen = names.split(separator: ",").compactMap { WorldBackend(rawValue: String($0)) }
        precondition(!chosen.isEmpty, "BEARER_WORLD names no backend (memory, live): \(names)")
        return chosen
    }()
}
