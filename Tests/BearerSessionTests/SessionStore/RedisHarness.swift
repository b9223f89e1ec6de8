import BearerCore
import BearerIO
import BearerTestSupport
import Dispatch
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

/// Loops for the Redis clients of the tests.
let redisTestGroup = EventLoopGroup(count: 1, name: "test-redis")

/// Waits on a semaphore that is signalled on every event, until `condition` holds (bounded): tests
/// wait for what they expect to happen, never for a fixed time.
final class EventWaiter: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func signal() { self.semaphore.signal() }

    func wait(timeout: Duration = .seconds(10), until condition: () -> Bool) -> Bool {
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
        while !condition() {
            guard self.semaphore.wait(timeout: deadline) == .success else { return condition() }
        }
        return true
    }
}

/// A `RedisConnection` on a test loop, driven from the test's thread.
final class RedisHarness: RedisConnectionObserver, @unchecked Sendable {
    enum Event: Equatable {
        case ready
        case down(RedisError)
        case message(channel: String, payload: String)
    }

    let loop: EventLoop
    /// Set and used on `loop`; the lock only lets `deinit` reach it to stop it there.
    private let connectionBox = Locked<UnsafeTransfer<RedisConnection>?>(nil)
    private let recorded = Locked<[Event]>([])
    private let waiter = EventWaiter()

    init(
        _ endpoint: RedisEndpoint,
        subscribeTo channel: String? = nil,
        tls: (any TLSConnectionFactory)? = nil,
        commandTimeout: Duration = .seconds(5),
        keepaliveInterval: Duration? = nil
    ) {
        self.loop = redisTestGroup.loops[0]
        let connector = OutboundConnector(tls: tls, connectTimeout: .seconds(5))
        self.loop.execute {
            let connection = RedisConnection(
                endpoint: endpoint,
                subscribeTo: channel,
                loop: self.loop,
                connector: connector,
                commandTimeout: commandTimeout,
                keepaliveInterval: keepaliveInterval
            )
            connection.observer = self
            self.connectionBox.withLock { $0 = UnsafeTransfer(connection) }
            connection.start()
        }
    }

    deinit {
        let connection = self.connectionBox.withLock { $0 }
        self.loop.execute { connection?.value.stop() }
    }

    private var connection: RedisConnection? { self.connectionBox.withLock { $0?.value } }

    var events: [Event] { self.recorded.withLock { $0 } }

    /// Sends `commands` in one loop turn (pipelined) and waits for every reply, in order.
    func run(_ commands: [RESPCommand], timeout: Duration = .seconds(10)) -> [Result<RESPValue, RedisError>] {
        let results = Locked<[Int: Result<RESPValue, RedisError>]>([:])
        self.loop.execute {
            for (index, command) in commands.enumerated() {
                self.connection?.send(command) { result in
                    results.withLock { $0[index] = result }
                    self.waiter.signal()
                }
            }
        }
        _ = self.waiter.wait(timeout: timeout) { results.withLock { $0.count } == commands.count }
        return results.withLock { answered in (0..<commands.count).map { answered[$0] ?? .failure(.stopped) } }
    }

    func run(_ command: RESPCommand) -> Result<RESPValue, RedisError> {
        self.run([command])[0]
    }

    /// Waits (bounded) until the recorded events satisfy `condition`.
    func wait(timeout: Duration = .seconds(10), for condition: ([Event]) -> Bool) -> Bool {
        self.waiter.wait(timeout: timeout) { condition(self.events) }
    }

    func waitUntilReady(count: Int = 1) -> Bool {
        self.wait { $0.filter { $0 == .ready }.count >= count }
    }

    func redisConnectionReady(_ connection: RedisConnection) {
        self.record(.ready)
    }

    func redisConnectionDown(_ connection: RedisConnection, error: RedisError) {
        self.record(.down(error))
    }

    func redisMessage(_ connection: RedisConnection, channel: [UInt8], payload: [UInt8]) {
        self.record(
            .message(
                channel: String(decoding: channel, as: UTF8.self),
                payload: String(decoding: payload, as: UTF8.self)
            )
        )
    }

    private func record(_ event: Event) {
        self.recorded.withLock { $0.append(event) }
        self.waiter.signal()
    }
}

extension RedisEndpoint {
    /// The test server's address, over TCP.
    static func local(
        _ server: RedisServerProcess,
        password: String? = nil,
        username: String? = nil,
        database: Int = 0
    )
        -> RedisEndpoint
    {
        RedisEndpoint(
            host: "127.0.0.1",
            port: server.port,
            username: username,
            password: password.map { Secret($0) },
            database: database
        )
    }
}

/// Starts a `redis-server` for one test; fails the test (not skips it) when that is impossible.
func startRedis(configuration: [String] = [], tls: RedisServerProcess.TLSFiles? = nil) throws -> RedisServerProcess {
    try RedisServerProcess(configuration: configuration, tls: tls)
}
