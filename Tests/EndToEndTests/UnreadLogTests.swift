import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// The binary with its stderr in a pipe nobody reads (a stuck supervisor, a `| less` left in the
/// background): the log must never stop the proxy. (It did: with `access_log = stderr` the loops
/// blocked in `write(2)` once the pipe's 64 KiB were full, a few hundred requests in.)
@Suite struct UnreadLogTests {
    @Test func servesTwentyThousandRequestsWithStderrAPipeNobodyReads() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["unread-log-token"])
        try upstream.start()
        defer { upstream.stop() }
        let base = try ScratchSpace.newPath("unread")
        // Unix sockets: the proxy's ready line goes to the unread pipe, so the test waits for the
        // socket instead of reading a port from it.
        let config = temporaryFile(
            """
            listen = unix:\(base).sock
            admin_listen = unix:\(base)-admin.sock
            upstream = \(upstream.baseURL)
            access_token = unread-log-token
            access_log = stderr
            log_level = debug
            """
        )
        let stderr = Pipe()
        let proxy = try ProxyProcess(["--config", config], unreadStandardError: stderr)
        let address = SocketAddress.unix(path: "\(base).sock")
        let admin = SocketAddress.unix(path: "\(base)-admin.sock")
        #expect(waitUntil { (try? BlockingHTTPClient(connectingTo: admin, timeout: .seconds(2))) != nil })

        // 20,000 requests, 100 at a time pipelined on one keep-alive connection; long paths make
        // long access log lines, megabytes of them, far more than the pipe and the log's queue hold.
        let client = try BlockingHTTPClient(connectingTo: address, timeout: .seconds(10))
        let path = "/" + String(repeating: "p", count: 300)
        var answered = 0
        batches: for _ in 0..<200 {
            client.send(String(repeating: "GET \(path) HTTP/1.1\r\nHost: api\r\n\r\n", count: 100))
            for _ in 0..<100 {
                guard (try? client.readResponse().status) == 200 else { break batches }
                answered += 1
            }
        }
        #expect(answered == 20_000, "the proxy stopped answering after \(answered) requests")

        #expect(try Self.droppedLines(admin) > 0, "lines that cannot be written are dropped and counted")
        // The queue holds what the pipe did not take, bounded (LogWriter.defaultCapacity).
        let queued = try Self.metric("bearer_proxy_log_queue_bytes", admin)
        #expect(queued > 0 && queued <= LogWriter.defaultCapacity + 4096, "\(queued) bytes queued")

        // Someone reads the log again: the next line comes after one saying how many are missing.
        let log = Locked("")
        let reader = spawnThread(name: "stderr-reader") {
            readUntilEnd(stderr.fileHandleForReading.fileDescriptor) { text in log.withLock { $0 += text } }
        }
        // The log takes lines again once a request and a look at the metrics cost no line dropped since
        // the last look: its queue had room for their lines, so every line dropped before came before
        // an accepted one, which brought the notice of them. Until then the queue still holds the
        // backlog; one more request is sent, and the count looked at again.
        var sent = 0
        var dropped = -1
        #expect(
            waitUntil(timeout: .seconds(30)) {
                sent += 1
                client.send("GET /after-\(sent) HTTP/1.1\r\nHost: api\r\n\r\n")
                guard (try? client.readResponse().status) == 200 else { return false }
                let now = (try? Self.droppedLines(admin)) ?? -1
                defer { dropped = now }
                return now == dropped
            },
            "the log never took lines again"
        )
        // Stopped, the proxy has written its log to the end, and the reader has read it all.
        let status = proxy.stop()
        #expect(status == 0)
        guard status != nil else { return }  // the reader ends with the process's stderr
        joinThread(reader)
        let text = log.withLock { $0 }
        let notices = text.split(separator: "\n").filter { $0.contains(" log lines dropped") }
        #expect(!notices.isEmpty)
        #expect(notices.allSatisfy { $0.contains(" warn log lines dropped: the log was not taking them fast enough ") })
        let noticed = notices.compactMap { $0.split(separator: "lines=").last.flatMap { Int($0) } }.reduce(0, +)
        #expect(noticed == dropped, "the notices account for every dropped line")
        #expect(text.contains("path=/after-\(sent) "), "the last request's line was written")
        #expect(text.contains(" info stopped"))
    }

    /// `bearer_proxy_log_lines_dropped_total` from the admin endpoint.
    static func droppedLines(_ admin: SocketAddress) throws -> Int {
        try Self.metric("bearer_proxy_log_lines_dropped_total", admin)
    }

    /// A metric without labels from the admin endpoint.
    static func metric(_ name: String, _ admin: SocketAddress) throws -> Int {
        let metrics = try httpRequest(admin, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").text
        let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") })
        return try #require(Int(line.split(separator: " ")[1]))
    }
}
