import Foundation

/// A program (or file) from a Debian package that some tests need, looked for once, and the reason
/// those tests give when they are skipped without it.
///
/// The reason names exactly what was checked (the path, the folders searched, the interpreter a
/// Python module must import in) and the package that provides it: a bare "needs Debian's
/// python3-requests" sent a user whose own `python3` has requests looking in the wrong place. On a
/// developer's machine a missing tool skips its tests; under CI (`CI=true`, where `.ci/run` installs
/// every one) they run and fail instead, so nothing is skipped there.
package struct ExternalTool: Sendable {
    /// What the tests run: the program's path (its name, when it was not found on PATH), the
    /// interpreter for a Python module, or the file.
    package let program: String
    /// Whether the check passed: the program is there (for a module: `program` imports it).
    package let isInstalled: Bool
    /// What was checked, as the skip reason names it: `/usr/bin/curl`, `/usr/bin/python3 with the
    /// requests module`, `redis-server on PATH or in /usr/bin, /usr/sbin`.
    package let checked: String
    /// The Debian package that provides it.
    package let debianPackage: String

    /// Whether the tests that need it run: it is installed, or this is CI.
    package var isInstalledOrCI: Bool {
        self.isInstalled || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// `needs /usr/bin/curl (apt-get install curl)`: the line a skipped test prints.
    package var skipReason: String {
        "needs \(self.checked) (apt-get install \(self.debianPackage))"
    }

    /// The program or file at `path`; `isExecutable` false for a file that is only read.
    package static func at(_ path: String, isExecutable: Bool = true, package: String) -> ExternalTool {
        let files = FileManager.default
        let isInstalled = isExecutable ? files.isExecutableFile(atPath: path) : files.fileExists(atPath: path)
        return ExternalTool(program: path, isInstalled: isInstalled, checked: path, debianPackage: package)
    }

    /// `name` in the folders of PATH, then in `folders` (where Debian puts it, should PATH lack them).
    package static func named(_ name: String, orIn folders: [String], package: String) -> ExternalTool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let searched = path.split(separator: ":").map(String.init) + folders
        let found = searched.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        return ExternalTool(
            program: found ?? name,
            isInstalled: found != nil,
            checked: "\(name) on PATH or in \(folders.joined(separator: ", "))",
            debianPackage: package
        )
    }

    /// `interpreter` when it imports `module` from Debian's packages: Debian's python3, since the
    /// `python3` first on PATH may be another build (pyenv, a virtualenv) with packages of its own, and
    /// in isolated mode (`-I`: no PYTHONPATH, no user site-packages), as the tests that start it with
    /// an environment of their own find it.
    package static func pythonModule(
        _ module: String,
        interpreter: String = "/usr/bin/python3",
        package: String
    ) -> ExternalTool {
        let outcome = try? runProgram([interpreter, "-I", "-c", "import \(module)"], timeout: .seconds(20))
        return ExternalTool(
            program: interpreter,
            isInstalled: outcome?.status == 0,
            checked: "\(interpreter) with the \(module) module",
            debianPackage: package
        )
    }

    /// A TLS client that is not our code, trusting only what it is told to.
    package static let curl = ExternalTool.at("/usr/bin/curl", package: "curl")
    /// The maker (and checker) of the tests' keys and certificates (`TestKeyMaterial`).
    package static let openssl = ExternalTool.named("openssl", orIn: ["/usr/bin", "/bin"], package: "openssl")
    /// The session store's real peer (`RedisServerProcess`).
    package static let redisServer = ExternalTool.named(
        "redis-server",
        orIn: ["/usr/bin", "/usr/sbin", "/usr/local/bin"],
        package: "redis-server"
    )
    /// A WebSocket client that is not our code.
    package static let pythonWebSockets = ExternalTool.pythonModule("websockets", package: "python3-websockets")
    /// The HTTP client most Python programs use.
    package static let pythonRequests = ExternalTool.pythonModule("requests", package: "python3-requests")
    /// HTTP/2 clients that are not our code: `nghttp` and `h2load` (many concurrent streams).
    package static let h2load = ExternalTool.at("/usr/bin/h2load", package: "nghttp2-client")
    /// An HTTP/2 protocol stack for hand-made clients (resets, windows) and the h2 upstream
    /// (`H2FrontServer`).
    package static let pythonH2 = ExternalTool.pythonModule("h2", package: "python3-h2")
    /// The h2 server most users' APIs sit behind, as an upstream (`NginxServer`).
    package static let nginx = ExternalTool.named("nginx", orIn: ["/usr/sbin"], package: "nginx")
    /// gRPC's own stack for a real server and client (`GRPCServer`).
    package static let pythonGRPC = ExternalTool.pythonModule("grpc", package: "python3-grpcio")
    /// An OAuth 2.0 authorization server library nobody here wrote (`AuthlibServer`).
    package static let pythonAuthlib = ExternalTool.pythonModule("authlib", package: "python3-authlib")
    /// A real browser for the admin page (`AdminPageBrowserTests`), driven headless over its
    /// DevTools protocol.
    package static let chromium = ExternalTool.at("/usr/bin/chromium", package: "chromium")
    /// The formatter `man` uses, which checks the man pages (`groff -ww`: every warning).
    package static let groff = ExternalTool.named("groff", orIn: ["/usr/bin"], package: "groff-base")
    /// The shells whose completion scripts `bearer-proxy completions` writes (`CompletionsTests`).
    package static let bash = ExternalTool.named("bash", orIn: ["/usr/bin", "/bin"], package: "bash")
    package static let zsh = ExternalTool.named("zsh", orIn: ["/usr/bin", "/bin"], package: "zsh")
    package static let fish = ExternalTool.named("fish", orIn: ["/usr/bin"], package: "fish")
    /// A private session bus for the keyring tests (`SessionBus`).
    package static let dbusDaemon = ExternalTool.named("dbus-daemon", orIn: ["/usr/bin"], package: "dbus-daemon")
    /// A real Secret Service on that bus (`SessionBus.startKeyring`).
    package static let gnomeKeyring = ExternalTool.named(
        "gnome-keyring-daemon",
        orIn: ["/usr/bin"],
        package: "gnome-keyring"
    )
    /// libsecret's command line: the keyring's reader and writer that is not our code.
    package static let secretTool = ExternalTool.named("secret-tool", orIn: ["/usr/bin"], package: "libsecret-tools")
    /// The system's CA certificates where OpenSSL finds them on Debian.
    package static let systemCAStore = ExternalTool.at(
        "/etc/ssl/certs/ca-certificates.crt",
        isExecutable: false,
        package: "ca-certificates"
    )
}
