import BearerCore
import BearerIO
import Foundation
import Glibc

/// mitmproxy in regular (forward) mode with a one-line addon that sets the bearer header: what an
/// intercepting proxy without bearer-proxy's narrowness costs, for intercept's comparison. It makes its
/// own CA in a folder of the bench's; the load generator does not verify, as for bearer-proxy.
final class MitmproxyTarget {
    private(set) var process: ChildProcess?
    let directory: String
    let port: Int

    static func start(token: String, trusting caFile: String, log: (String) -> Void) throws -> MitmproxyTarget {
        let binary = try executable(
            ["/usr/bin/mitmdump", "/usr/local/bin/mitmdump"],
            missing: "--with-mitmproxy: mitmdump is not installed (apt-get install mitmproxy)"
        )
        let target = try MitmproxyTarget(binary: binary, token: token, caFile: caFile)
        log("mitmproxy: regular mode with an addon setting the header, on port \(target.port)")
        return target
    }

    private init(binary: String, token: String, caFile: String) throws {
        (self.directory, self.port) = try comparisonWorkspace("mitmproxy")
        let addon = """
            def request(flow):
                flow.request.headers["Authorization"] = "Bearer \(token)"

            """
        try addon.write(toFile: self.directory + "/addon.py", atomically: true, encoding: .utf8)
        let arguments = [
            binary, "--mode", "regular", "--listen-host", "127.0.0.1", "--listen-port", "\(self.port)",
            "--set", "confdir=\(self.directory)", "--set", "ssl_verify_upstream_trusted_ca=\(caFile)",
            "--set", "termlog_verbosity=error", "--set", "flow_detail=0", "-s", self.directory + "/addon.py",
        ]
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let process = try BenchChildren.start(arguments, stdout: null, stderr: null)
        self.process = process
        let deadline = Instant.now() + .seconds(30)
        while Instant.now() < deadline && process.isRunning {
            if (try? BlockingProbe.connect(port: self.port)) == true { return }
            usleep(50_000)
        }
        self.stop()
        throw BenchError("mitmdump did not start")
    }

    func stop() {
        if let process = self.process {
            if process.isRunning {
                process.signal(SIGTERM)
                if process.wait(timeout: .seconds(10)) == nil { process.signal(SIGKILL) }
            }
            BenchChildren.ended(process)
        }
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}
