import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// SIGTERM or SIGINT at any moment of start-up: the process ends, cleanly, and its unix socket file
/// is gone. The moments are the steps of start-up a test can see from outside, in order: at once,
/// once the signal thread runs (the first thing the program makes), the instant the socket file
/// appears (the window between bind and a ready proxy), once the socket accepts a connection, and
/// once the ready line is printed.
@Suite struct StartupSignalTests {
    enum Moment: CaseIterable, CustomStringConvertible {
        case atOnce
        case whenTheSignalThreadRuns
        case whenTheSocketFileAppears
        case whenTheSocketAccepts
        case whenReady

        var description: String {
            switch self {
            case .atOnce: "at once"
            case .whenTheSignalThreadRuns: "when the signal thread runs"
            case .whenTheSocketFileAppears: "when the socket file appears"
            case .whenTheSocketAccepts: "when the socket accepts"
            case .whenReady: "when ready"
            }
        }

        /// Waits (bounded) for the moment; false if the process ended before it.
        func wait(for proxy: ProxyProcess, socket path: String) -> Bool {
            switch self {
            case .atOnce:
                return true
            case .whenTheSignalThreadRuns:
                return waitUntil {
                    !proxy.process.isRunning
                        || ProcessThread.all(of: proxy.process.pid).contains { $0.name == "signals" }
                }
            case .whenTheSocketFileAppears:
                return StartupSignalTests.waitForFile(path, of: proxy.process)
            case .whenTheSocketAccepts:
                return waitUntil {
                    !proxy.process.isRunning || (try? BlockingHTTPClient(connectingTo: .unix(path: path))) != nil
                }
            case .whenReady:
                return proxy.waitUntilListening() != nil
            }
        }
    }

    @Test func aSignalAtAnyMomentOfStartUpLeavesNoSocketFile() throws {
        let moments = Moment.allCases
        for round in 0..<(5 * moments.count) {
            let moment = moments[round % moments.count]
            let signal = round % 2 == 0 ? SIGTERM : SIGINT
            let path = try ScratchSpace.newPath("start.sock")
            let proxy = try ProxyProcess(["--demo", "--listen", "unix:\(path)"])
            let context = "round \(round), signal \(signal) \(moment)"
            #expect(moment.wait(for: proxy, socket: path), "\(context): the moment never came")
            proxy.signal(signal)
            let termination = proxy.waitForTermination()
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

    /// Waits (bounded) until `path` exists, told by inotify the moment its folder gets it: the point
    /// is to land in the moment right after the proxy's bind. False if `process` ended first.
    static func waitForFile(_ path: String, of process: ChildProcess, timeout: Duration = .seconds(20)) -> Bool {
        let watch = inotify_init1(Int32(IN_CLOEXEC))
        guard watch >= 0 else { return false }
        defer { close(watch) }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard inotify_add_watch(watch, folder, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 else { return false }
        let deadline = Instant.now() + timeout
        var events = [UInt8](repeating: 0, count: 4096)
        // Looked at after the watch is set, then after each change in the folder.
        while !FileManager.default.fileExists(atPath: path) {
            // A process that ended makes no file: its end is looked at once a second meanwhile.
            guard process.isRunning, Instant.now() < deadline else { return false }
            var folderChanged = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
            if poll(&folderChanged, 1, 1000) > 0 { _ = read(watch, &events, events.count) }
        }
        return true
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
        #expect(waitUntil { !FileManager.default.fileExists(atPath: path) }, "the socket file stayed while draining")
        #expect(proxy.process.isRunning, "the first signal waits for the in-flight request")
        proxy.signal(SIGINT)
        #expect(proxy.waitForExit(timeout: .seconds(5)) == 1)
        #expect(proxy.standardError.contains("second signal"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
