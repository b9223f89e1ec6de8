import BearerCore
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Where the binary reads its configuration from: a pipe or FIFO (so secrets need not touch the disk).
@Suite struct ConfigSourceTests {
    static let config = "upstream = http://piped.example:8081\nlisten = 127.0.0.1:0\naccess_token = piped-secret-1\n"

    func expectCheckedPipedConfig(
        _ result: (status: Int32?, stdout: String, stderr: String),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.status == 0, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.contains("upstream = http://piped.example:8081\n"), sourceLocation: sourceLocation)
        #expect(result.stdout.contains("access_token = <redacted>\n"), sourceLocation: sourceLocation)
        // piped.example is a placeholder host: --check passes, with that warning.
        #expect(result.stdout.hasSuffix("configuration OK (1 warning)\n"), sourceLocation: sourceLocation)
        #expect(!result.stdout.contains("piped-secret-1"), sourceLocation: sourceLocation)
    }

    @Test func readsAFIFO() throws {
        let fifo = temporaryFile("", name: "unused") + "-fifo"
        #expect(mkfifo(fifo, 0o600) == 0, "mkfifo: \(String(cString: strerror(errno)))")
        defer { unlink(fifo) }
        let proxy = try ProxyProcess(["--config", fifo, "--check"])
        // Opening the write end without blocking fails (ENXIO) until the proxy has opened the read end.
        var fd: Int32 = -1
        #expect(
            waitUntil {
                fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                return fd >= 0
            }
        )
        if fd >= 0 {
            let bytes = Array(Self.config.utf8)
            #expect(write(fd, bytes, bytes.count) == bytes.count)
            close(fd)
        }
        let status = proxy.waitForExit()
        self.expectCheckedPipedConfig((status, proxy.standardOutput, proxy.standardError))
    }

    /// Runs `shell -c script` with the binary as `$0` and `$CONFIG` holding printf's format for the config.
    func checkThroughShell(_ shell: String, _ script: String, sourceLocation: SourceLocation = #_sourceLocation) throws
    {
        let format = Self.config.replacingOccurrences(of: "\n", with: "\\n")
        let proxy = try ProxyProcess([], environment: ["CONFIG": format], launcher: [shell, "-c", script])
        let status = proxy.waitForExit()
        self.expectCheckedPipedConfig(
            (status, proxy.standardOutput, proxy.standardError),
            sourceLocation: sourceLocation
        )
    }

    @Test func readsAProcessSubstitution() throws {
        // What `bearer-proxy --config <(pass show api/proxy.conf)` gives the proxy: /dev/fd/N, a pipe.
        try self.checkThroughShell("/bin/bash", #"exec "$0" --check --config <(printf "$CONFIG")"#)
    }

    @Test func readsStandardInput() throws {
        try self.checkThroughShell("/bin/sh", #"printf "$CONFIG" | "$0" --check --config /dev/stdin"#)
    }

    @Test func readsTheDefaultFileWhenNoConfigIsGiven() throws {
        let base = URL(fileURLWithPath: temporaryFile("", name: "unused")).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: base + "/bearer-proxy", withIntermediateDirectories: true)
        let path = base + "/bearer-proxy/proxy.conf"
        try Self.config.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try ProxyProcess.run(["--check"], environment: ["XDG_CONFIG_HOME": base])
        self.expectCheckedPipedConfig(result)
        #expect(result.stdout.hasPrefix("# read from \(path)\n"))

        let demo = try ProxyProcess.run(["--check", "--demo"], environment: ["XDG_CONFIG_HOME": base])
        #expect(demo.status == 0)
        #expect(!demo.stdout.contains("piped.example"), "--demo read the default file")
    }
}
