import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy

/// A start that fails half-way gives back what it acquired (`ProxyBuilder`): whichever step fails,
/// every listening socket bound before it is closed and every unix socket file made is removed, so a
/// start that follows finds the addresses free.
@Suite struct StartRollbackTests {
    /// A step after the listeners that fails, and the error it says.
    struct Failure: Sendable, CustomTestStringConvertible {
        let id: String
        let make: @Sendable (inout Configuration, _ takenPort: Int) -> Void
        let error: String
        var testDescription: String { self.id }
    }

    static let failures = [
        Failure(
            id: "a named session's listener",
            make: { configuration, port in configuration.sessions[1].listen = [.hostPort(host: "127.0.0.1", port: port)]
            },
            error: "cannot listen on [session other] listen 127.0.0.1:"
        ),
        Failure(
            id: "the refresh token file's folder",
            make: { configuration, _ in configuration.refreshTokenFile = "/nonexistent/bearer-rollback/rt" },
            error: "/nonexistent/bearer-rollback/rt: refresh_token_file:"
        ),
        Failure(
            id: "the access log",
            make: { configuration, _ in configuration.accessLog = .file("/nonexistent/bearer-rollback/access.log") },
            error: "/nonexistent/bearer-rollback/access.log: access_log: cannot open:"
        ),
        Failure(
            id: "the admin listener, the last step",
            make: { configuration, port in configuration.adminListen = .hostPort(host: "127.0.0.1", port: port) },
            error: "cannot listen on admin_listen 127.0.0.1:"
        ),
    ]

    @Test(arguments: failures)
    func aFailedStartClosesEveryListenerAndRemovesItsSocketFiles(_ failure: Failure) throws {
        let mainSocket = try ScratchSpace.newPath("main.sock")
        let sessionSocket = try ScratchSpace.newPath("other.sock")
        let port = try freeLoopbackPort()
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: port), .unix(path: mainSocket)]
        configuration.upstream = try HTTPURL.parse("http://127.0.0.1:9/api").get()
        configuration.accessToken = Secret("t")
        configuration.workers = 1
        var other = SessionSettings(name: "other")
        other.upstream = try HTTPURL.parse("http://127.0.0.2:9/other").get()
        other.listen = [.unix(path: sessionSocket)]
        configuration.sessions.append(other)
        var failing = configuration
        // Taken by the proxy's own main listener, bound first.
        failure.make(&failing, port)

        let logs = LogSink(capturing: ())
        let socketFiles = UnixSocketFiles()
        do {
            let server = try ProxyServer.start(
                configuration: failing,
                logger: Logger(level: .error, sink: logs),
                socketFiles: socketFiles
            )
            server.shutdown()
            Issue.record("the start did not fail")
        } catch {
            #expect(error.description.hasPrefix(failure.error), "\(error)")
        }
        for path in [mainSocket, sessionSocket] {
            var info = stat()
            #expect(lstat(path, &info) != 0, "\(path) was left behind")
        }
        // Every address is free again: the same configuration without the failure starts.
        let server = try ProxyServer.start(configuration: configuration, logger: Logger(level: .error, sink: logs))
        server.shutdown()
    }
}
