import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

/// The proxy looks at refresh_token_file while it runs, and stops looking when it stops.
@Suite struct RefreshTokenFileWatcherTests {
    @Test func theWatcherStopsWithTheProxy() throws {
        // The test's own loops outlive the proxy: what stops must be the watcher, not its loop.
        let group = EventLoopGroup(count: 1, name: "watcher-test")
        defer { group.shutdown() }
        let folder = try ScratchSpace.newDirectory("watch")
        let path = folder + "/refresh_token"
        try "rt-first\n".write(toFile: path, atomically: true, encoding: .utf8)
        var configuration = Configuration()
        configuration.listen = [.hostPort(host: "127.0.0.1", port: 0)]
        configuration.upstream = try HTTPURL.parse("http://127.0.0.1:9").get()
        // A token that needs no refresh: nothing but the watcher reads the file.
        configuration.accessToken = Secret("tok-watched")
        configuration.tokenURL = try HTTPURL.parse("http://127.0.0.1:9/token").get()
        configuration.grantType = .refreshToken
        configuration.clientID = "c"
        configuration.refreshTokenFile = path
        let proxy = try ProxyServer.start(configuration: configuration, logger: .silent, group: group)
        let store = try #require(proxy.runtime.session.store)
        #expect(store.current == Secret("rt-first"))

        try "rt-second\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(waitUntil { store.current == Secret("rt-second") }, "the running proxy reads the new file")

        let watcher = try #require(proxy.runtime.session.fileWatcher.withLock { $0 })
        #expect(!watcher.isStopped)
        proxy.shutdown()
        // Stopped with the proxy: a stopped watcher looks no more and keeps no timer
        // (BearerSessionTests' RefreshTokenFileWatcherTests show it on a manual clock).
        #expect(watcher.isStopped, "the file is still looked at after the proxy stopped")
    }
}
