import BearerCore
import BearerIO
import FoundationEssentials
import Glibc

/// Opens a URL in the user's browser with `xdg-open` (Linux desktops) or `open` (macOS), when one
/// is on PATH. The browser is a convenience: the URL is always printed first.
enum BrowserOpener {
    /// Starts the opener without waiting for it; false when there is none or it cannot start.
    static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let program = self.findOpener(environment: environment) else { return false }
        // Its output must not hold our stdout open (a pipe reader waits for every writer to close).
        let null = Glibc.open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard null >= 0 else { return false }
        defer { close(null) }
        guard let pid = try? spawnProcess([program, url], stdout: null, stderr: null) else { return false }
        // Reaped when it ends (xdg-open returns once it has handed the URL on), so no zombie stays.
        _ = spawnThread(name: "browser-opener") { reapChild(pid) }
        return true
    }

    static func findOpener(environment: [String: String]) -> String? {
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for name in ["xdg-open", "open"] {
            for directory in directories where !directory.isEmpty {
                let path = directory + "/" + name
                if FileManager.default.isExecutableFile(atPath: path) { return path }
            }
        }
        return nil
    }
}
