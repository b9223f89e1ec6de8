import Foundation

/// Opens a URL in the user's browser with `xdg-open` (Linux desktops) or `open` (macOS), when one
/// is on PATH. The browser is a convenience: the URL is always printed first.
enum BrowserOpener {
    /// Starts the opener without waiting for it; false when there is none or it cannot start.
    static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let program = self.findOpener(environment: environment) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = [url]
        // Its output must not hold our stdout open (a pipe reader waits for every writer to close).
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            return true
        } catch {
            return false
        }
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
