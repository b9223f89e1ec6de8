import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// Built `bearer-proxy` processes started one after another, each with its listener and admin
/// address: what the tests of several processes sharing one session (a fleet's store, one keyring
/// item) talk to. Killed (by PID) when this goes away.
class ServingProxies {
    var processes: [ProxyProcess] = []
    var addresses: [SocketAddress] = []
    var admins: [SocketAddress] = []

    /// Throwing, so that subclasses that start servers first can be.
    init() throws {}

    deinit {
        for process in self.processes where process.process.isRunning { process.signal(SIGKILL) }
    }

    /// Starts one more with `config` (it must set `admin_listen`), and waits until it listens.
    func startProxy(config: String, environment: [String: String]) throws {
        let process = try ProxyProcess(["--config", config], environment: environment)
        self.processes.append(process)
        let listening = try #require(process.waitUntilListening(), "\(process.standardError)")
        self.addresses.append(SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: listening))!)
        let admin = try #require(word(startingWith: "admin=", in: process.standardError)?.dropFirst(6))
        self.admins.append(SocketAddress(ipAddress: "127.0.0.1", port: try tcpPort(of: String(admin)))!)
    }

    /// Process `index`'s /status.
    func status(_ index: Int) throws -> [String: Any] {
        let admin = self.admins[index]
        let text = try httpRequest(admin, "GET /status HTTP/1.1\r\nHost: \(admin)\r\n\r\n").text
        return (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    func get(_ path: String, through index: Int) throws -> BlockingHTTPClient.Response {
        let address = self.addresses[index]
        return try httpRequest(address, "GET \(path) HTTP/1.1\r\nHost: \(address)\r\n\r\n")
    }
}
