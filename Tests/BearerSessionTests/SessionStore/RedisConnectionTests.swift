import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

private func bulk(_ text: String) -> RESPValue { .bulkString(Array(text.utf8)) }

/// The RESP client against Debian's redis-server on a loopback port: login, databases, pipelining,
/// pub/sub, TLS, and what a broken or hung server does to it.
@Suite(.requires(.redisServer))
struct RedisConnectionTests {
    @Test func setAndGetRoundTrip() throws {
        let redis = try startRedis()
        let client = RedisHarness(.local(redis))
        let results = client.run([
            RESPCommand("SET", "k", "value\r\nwith CRLF"), RESPCommand("GET", "k"), RESPCommand("GET", "missing"),
        ])
        #expect(
            results == [
                .success(.simpleString("OK")), .success(bulk("value\r\nwith CRLF")), .success(.bulkString(nil)),
            ]
        )
    }

    @Test func pipelinedCommandsAreAnsweredInOrder() throws {
        let redis = try startRedis()
        let client = RedisHarness(.local(redis))
        let results = client.run(Array(repeating: RESPCommand("INCR", "counter"), count: 500))
        #expect(results == (1...500).map { .success(.integer(Int64($0))) })
    }

    @Test func anErrorReplyFailsOnlyItsCommand() throws {
        let redis = try startRedis()
        let client = RedisHarness(.local(redis))
        let results = client.run([RESPCommand("SET", "k", "v"), RESPCommand("INCR", "k"), RESPCommand("GET", "k")])
        #expect(results[0] == .success(.simpleString("OK")))
        guard case .failure(.reply(let message)) = results[1] else {
            Issue.record("expected an error reply, got \(results[1])")
            return
        }
        #expect(message.hasPrefix("ERR"))
        #expect(results[2] == .success(bulk("v")))
    }

    @Test func logsInWithRequirepass() throws {
        let redis = try startRedis(configuration: ["--requirepass", "store-pass-42"])
        let client = RedisHarness(.local(redis, password: "store-pass-42"))
        #expect(client.run(RESPCommand("SET", "k", "v")) == .success(.simpleString("OK")))

        let anonymous = RedisHarness(.local(redis))
        guard case .failure(.reply(let message)) = anonymous.run(RESPCommand("GET", "k")) else {
            Issue.record("a client without the password was answered")
            return
        }
        #expect(message.hasPrefix("NOAUTH"))
    }

    @Test func logsInAsAnACLUser() throws {
        let redis = try startRedis(configuration: [
            "--user", "fleet", "on", ">fleet-pass-7", "~bearer-proxy:*", "&*", "+@all",
        ])
        let client = RedisHarness(.local(redis, password: "fleet-pass-7", username: "fleet"))
        #expect(client.run(RESPCommand("SET", "bearer-proxy:{a}:x", "v")) == .success(.simpleString("OK")))
        // The ACL confines the user to the proxy's keys.
        guard case .failure(.reply(let message)) = client.run(RESPCommand("SET", "other", "v")) else {
            Issue.record("the ACL did not apply")
            return
        }
        #expect(message.hasPrefix("NOPERM"))
    }

    @Test func aWrongPasswordIsReportedWithoutThePassword() throws {
        let redis = try startRedis(configuration: ["--requirepass", "right-pass"])
        let client = RedisHarness(.local(redis, password: "wrong-pass-99"))
        let result = client.run(RESPCommand("GET", "k"))
        // Asked for during the handshake, the command fails with the refusal; asked for once the
        // connection is down and waiting to retry, it fails as unavailable, saying why (which of
        // the two depends on how fast the loop connects).
        switch result {
        case .failure(.refused(let command, let message)):
            #expect(command == "AUTH")
            #expect(message.hasPrefix("WRONGPASS"))
        case .failure(.unavailable(let reason)):
            #expect(reason.hasPrefix("AUTH refused: WRONGPASS"))
        default:
            Issue.record("expected the login to be refused, got \(result)")
        }
        #expect(
            client.wait {
                $0.contains { event in
                    guard case .down(.refused(let command, let message)) = event else { return false }
                    return command == "AUTH" && message.hasPrefix("WRONGPASS")
                }
            }
        )
        for event in client.events { #expect(!"\(event)".contains("wrong-pass-99")) }
        #expect(!result.description.contains("wrong-pass-99"))
    }

    @Test func selectsTheConfiguredDatabase() throws {
        let redis = try startRedis()
        let third = RedisHarness(.local(redis, database: 3))
        #expect(third.run(RESPCommand("SET", "k", "in-db-3")) == .success(.simpleString("OK")))
        let first = RedisHarness(.local(redis))
        #expect(first.run(RESPCommand("GET", "k")) == .success(.bulkString(nil)))
        #expect(first.run([RESPCommand("SELECT", "3"), RESPCommand("GET", "k")])[1] == .success(bulk("in-db-3")))
    }

    @Test func reconnectsWhenTheServerComesBack() throws {
        let redis = try startRedis()
        let client = RedisHarness(.local(redis))
        #expect(client.run(RESPCommand("SET", "k", "v")) == .success(.simpleString("OK")))
        #expect(client.waitUntilReady())
        redis.stop()
        #expect(client.wait { $0.contains { if case .down = $0 { true } else { false } } })
        guard case .failure = client.run(RESPCommand("GET", "k")) else {
            Issue.record("a command succeeded with the server stopped")
            return
        }
        try redis.start()
        #expect(client.waitUntilReady(count: 2))
        // No persistence: the restarted server is empty, and the connection works again.
        #expect(client.run(RESPCommand("GET", "k")) == .success(.bulkString(nil)))
    }

    @Test func aHungServerIsDroppedAfterTheCommandTimeout() throws {
        let redis = try startRedis()
        // The timeout also bounds the PINGs that must succeed: not so short that a loaded machine misses it.
        let client = RedisHarness(.local(redis), commandTimeout: .seconds(2))
        #expect(client.run(RESPCommand("PING")) == .success(.simpleString("PONG")))
        redis.pause()
        defer { redis.resume() }
        #expect(client.run(RESPCommand("PING")) == .failure(.noReply(after: .seconds(2))))
        #expect(client.wait { $0.contains(.down(.noReply(after: .seconds(2)))) })
        redis.resume()
        #expect(client.waitUntilReady(count: 2))
        #expect(client.run(RESPCommand("PING")) == .success(.simpleString("PONG")))
    }

    /// Nothing to send, and the server hangs (or a NAT dropped the connection without a word): the
    /// keepalive PING finds out, and the subscriber reconnects once the server is back.
    @Test func anIdleSubscriberNoticesAHungServer() throws {
        let redis = try startRedis()
        let subscriber = RedisHarness(
            .local(redis),
            subscribeTo: "ch",
            commandTimeout: .seconds(1),
            keepaliveInterval: .milliseconds(200)
        )
        #expect(subscriber.waitUntilReady())
        redis.pause()
        defer { redis.resume() }
        #expect(subscriber.wait { $0.contains(.down(.noReply(after: .seconds(1)))) })
        redis.resume()
        #expect(subscriber.waitUntilReady(count: 2))
        let publisher = RedisHarness(.local(redis))
        #expect(publisher.run(RESPCommand("PUBLISH", "ch", "after the hang")) == .success(.integer(1)))
        #expect(subscriber.wait { $0.contains(.message(channel: "ch", payload: "after the hang")) })
    }

    @Test func aSubscriberReceivesPublishedMessages() throws {
        let redis = try startRedis(configuration: ["--requirepass", "pw"])
        let subscriber = RedisHarness(.local(redis, password: "pw"), subscribeTo: "bearer-proxy:{a}:refreshed")
        #expect(subscriber.waitUntilReady())
        let publisher = RedisHarness(.local(redis, password: "pw"))
        #expect(publisher.run(RESPCommand("PUBLISH", "bearer-proxy:{a}:refreshed", "7")) == .success(.integer(1)))
        #expect(publisher.run(RESPCommand("PUBLISH", "elsewhere", "8")) == .success(.integer(0)))
        #expect(subscriber.wait { $0.contains(.message(channel: "bearer-proxy:{a}:refreshed", payload: "7")) })
        #expect(subscriber.events == [.ready, .message(channel: "bearer-proxy:{a}:refreshed", payload: "7")])
    }

    @Test func aSubscriberResubscribesAfterTheServerRestarts() throws {
        let redis = try startRedis()
        let subscriber = RedisHarness(.local(redis), subscribeTo: "ch")
        #expect(subscriber.waitUntilReady())
        redis.stop()
        try redis.start()
        #expect(subscriber.waitUntilReady(count: 2))
        let publisher = RedisHarness(.local(redis))
        #expect(publisher.run(RESPCommand("PUBLISH", "ch", "after restart")) == .success(.integer(1)))
        #expect(subscriber.wait { $0.contains(.message(channel: "ch", payload: "after restart")) })
    }

    @Test func speaksTLSToARedissStore() throws {
        let redis = try startRedis(
            configuration: ["--requirepass", "tls-pass"],
            tls: RedisServerProcess.TLSFiles(
                certificateFile: TLSFixtures.directory.appendingPathComponent("server.pem").path,
                keyFile: TLSFixtures.directory.appendingPathComponent("server.key").path,
                caFile: TLSFixtures.caFile
            )
        )
        var endpoint = RedisEndpoint.local(redis, password: "tls-pass")
        endpoint.usesTLS = true
        let client = RedisHarness(endpoint, tls: try TLSContext.client(caFile: TLSFixtures.caFile, verify: true))
        #expect(
            client.run([RESPCommand("SET", "k", "over TLS"), RESPCommand("GET", "k")])[1] == .success(bulk("over TLS"))
        )

        // A certificate the client does not trust: nothing is sent, the error says why.
        let untrusting = RedisHarness(endpoint, tls: try TLSContext.client(caFile: nil, verify: true))
        #expect(
            untrusting.wait { events in
                events.contains {
                    if case .down(.connect(.tlsFailed(let reason))) = $0 {
                        reason.contains("certificate")
                    } else {
                        false
                    }
                }
            },
            "\(untrusting.events)"
        )
        #expect(!untrusting.events.contains(.ready))
    }

    @Test func aRedissStoreIsNeverSpokenToInClearText() throws {
        // A plain server on the port the rediss:// URL names: a password in clear text would reach it.
        let redis = try startRedis()
        var endpoint = RedisEndpoint.local(redis, password: "never-in-clear")
        endpoint.usesTLS = true
        let client = RedisHarness(endpoint, tls: FailingTLSFactory())
        #expect(client.wait { $0.contains(.down(.connect(.tlsUnavailable))) })
        guard case .failure = client.run(RESPCommand("GET", "k")) else {
            Issue.record("a command was answered without TLS")
            return
        }
        let observer = RedisHarness(.local(redis))
        guard case .success(let info) = observer.run(RESPCommand("INFO", "stats")), let text = info.text else {
            Issue.record("INFO failed")
            return
        }
        // TCP connections were made (and closed unused); the only bytes the server ever received are
        // the observer's own INFO command.
        let infoBytes = RESPCommand("INFO", "stats").bytes.count
        #expect(text.contains("total_net_input_bytes:\(infoBytes)\r\n"), "\(text)")
    }
}

extension Result where Success == RESPValue, Failure == RedisError {
    var description: String {
        switch self {
        case .success(let value): "\(value)"
        case .failure(let error): error.reason
        }
    }
}
