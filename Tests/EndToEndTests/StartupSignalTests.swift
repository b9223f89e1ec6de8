import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// SIGTERM or SIGINT at any moment of start-up: the process ends, cleanly, and its unix socket file
/// is gone. The moments are spread over start-up: at once, the instant the socket file appears (the
/// window between bind and a ready proxy), and after delays growing round by round.
@Suite struct StartupSignalTests {
    enum Moment: CustomStringConvertible {
        case atOnce
        case whenTheSocketFileAppears
        case after(Duration)

        var description: String {
            switch self {
            case .atOnce: "at once"
            case .whenTheSocketFileAppears: "when the socket file appears"
            case .after(let delay): "after \(delay)"
            }
        }
    }

    @Test func aSignalAtAnyMomentOfStartUpLeavesNoSocketFile() throws {
        let rounds = 24
        for round in 0..<rounds {
            let moment: Moment =
                switch round % 3 {
                case 0: .atOnce
                case 1: .whenTheSocketFileAppears
                default: .after(.milliseconds(Int64(round * 4)))
                }
            let signal = round % 2 == 0 ? SIGTERM : SIGINT
            let path = try ScratchSpace.newPath("start.sock")
            let proxy = try ProxyProcess(["--demo", "--listen", "unix:\(path)"])
            switch moment {
            case .atOnce:
                break
            case .whenTheSocketFileAppears:
                // Busy-polls on purpose: the point is to land in the moment right after bind.
                let deadline = Instant.now() + .seconds(20)
                while !FileManager.default.fileExists(atPath: path) && proxy.process.isRunning
                    && Instant.now() < deadline
                {
                    usleep(100)
                }
            case .after(let delay):
                usleep(UInt32(delay.nanoseconds / 1000))
            }
            proxy.signal(signal)
            let termination = proxy.waitForTermination()
            let context = "round \(round), signal \(signal) \(moment)"
            #expect(termination != nil, "\(context): still running")
            #expect(!FileManager.default.fileExists(atPath: path), "\(context): the socket file was left behind")
            // Exit 0 (a clean stop); or, when the signal came before the program's first instruction
            // ran, death by that signal, as for any program.
            #expect(
                termination == .exited(status: 0) || termination == .killed(signal: signal),
                "\(context): ended \(String(describing: termination)); stderr: \(proxy.standardError)"
            )
            unlink(path)
        }
    }

    /// The socket file goes as the drain starts (new clients are refused; a replacement proxy may
    /// bind the path meanwhile); a second signal still ends the drain at once.
    @Test func theSocketFileGoesWhenTheDrainStartsAndASecondSignalExitsAtOnce() throws {
        let upstream = MockUpstream(group: e2eMockGroup)
        try upstream.start()
        defer { upstream.stop() }
        let path = try ScratchSpace.newPath("second.sock")
        let proxy = try ProxyProcess(["--upstream", upstream.baseURL, "--listen", "unix:\(path)"])
        #expect(proxy.waitUntilListening() == "unix:\(path)")
        let client = try BlockingHTTPClient(connectingTo: .unix(path: path))
        client.send("GET /hang HTTP/1.1\r\nHost: api\r\n\r\n")
        #expect(waitUntil { upstream.requests.contains { $0.target == "/hang" } })
        proxy.signal(SIGTERM)
        #expect(waitUntil { proxy.standardError.contains("shutting down") })
        #expect(waitUntil { !FileManager.default.fileExists(atPath: path) }, "the socket file stayed while draining")
        #expect(proxy.process.isRunning, "the first signal waits for the in-flight request")
        proxy.signal(SIGINT)
        #expect(proxy.waitForExit(timeout: .seconds(5)) == 1)
        #expect(proxy.standardError.contains("second signal"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
