import BearerCore
import BearerTestSupport
import Testing

@testable import BearerSession

/// The connection's decisions without sockets: login first, replies matched to commands in order,
/// backoff, timeouts, and what happens to commands when the connection breaks.
@Suite struct RedisConnectionStateMachineTests {
    typealias Machine = RedisConnectionStateMachine

    static let auth = RESPCommand("AUTH", "alice", "pw")
    static let select = RESPCommand("SELECT", "2")
    static let get = RESPCommand("GET", "k")
    static let set = RESPCommand("SET", "k", "v")

    static func machine(
        handshake: [RESPCommand] = [],
        subscriber: Bool = false,
        timeout: Duration = .seconds(5),
        keepalive: Duration? = nil
    ) -> Machine {
        Machine(
            settings: .init(
                handshake: handshake,
                isSubscriber: subscriber,
                commandTimeout: timeout,
                keepaliveInterval: keepalive
            )
        )
    }

    @Test func commandsAskedForWhileConnectingGoOutOnceConnected() {
        var machine = Self.machine()
        #expect(machine.started() == .connect)
        #expect(machine.commandRequested(1, Self.get, now: t0) == .none)
        #expect(machine.commandRequested(2, Self.set, now: t0) == .none)
        #expect(machine.connected(now: t0) == .becomeReady(write: [Self.get, Self.set]))
        #expect(machine.received(.bulkString(nil), now: t0) == .complete(1, .success(.bulkString(nil))))
        #expect(machine.received(.simpleString("OK"), now: t0) == .complete(2, .success(.simpleString("OK"))))
    }

    @Test func commandsWaitUntilAuthAndSelectSucceeded() {
        var machine = Self.machine(handshake: [Self.auth, Self.select])
        _ = machine.started()
        #expect(machine.commandRequested(1, Self.set, now: t0) == .none)
        #expect(machine.connected(now: t0) == .write([Self.auth, Self.select]))
        // A command asked for during the login waits too: it must not run before SELECT.
        #expect(machine.commandRequested(2, Self.get, now: t0) == .none)
        #expect(machine.received(.simpleString("OK"), now: t0) == .none)
        #expect(machine.received(.simpleString("OK"), now: t0) == .becomeReady(write: [Self.set, Self.get]))
        #expect(machine.state == .ready)
    }

    @Test func aRefusedLoginFailsTheWaitingCommandsAndRetriesLater() {
        var machine = Self.machine(handshake: [Self.auth, Self.select])
        _ = machine.started()
        _ = machine.commandRequested(1, Self.set, now: t0)
        _ = machine.connected(now: t0)
        let refusal = RedisError.refused(command: "AUTH", message: "WRONGPASS invalid username-password pair")
        #expect(
            machine.received(.error("WRONGPASS invalid username-password pair"), now: t0)
                == .reconnect(failing: [1], refusal, after: .milliseconds(100), wasReady: false)
        )
        #expect(machine.commandRequested(2, Self.get, now: t0) == .fail([2], .unavailable(refusal.reason)))
        #expect(machine.reconnectDue() == .connect)
    }

    @Test func pipelinedRepliesCompleteTheirCommandsInOrder() {
        var machine = Self.machine()
        _ = machine.started()
        _ = machine.connected(now: t0)
        for id in 1...3 { #expect(machine.commandRequested(UInt64(id), Self.get, now: t0) == .write([Self.get])) }
        #expect(machine.received(.integer(1), now: t0) == .complete(1, .success(.integer(1))))
        #expect(machine.received(.error("ERR wrong type"), now: t0) == .complete(2, .failure(.reply("ERR wrong type"))))
        #expect(machine.received(.integer(3), now: t0) == .complete(3, .success(.integer(3))))
        #expect(machine.nextDeadline == nil)
    }

    @Test func aLostConnectionFailsWhatWasInFlightAndBacksOff() {
        var machine = Self.machine()
        _ = machine.started()
        _ = machine.connected(now: t0)
        _ = machine.commandRequested(1, Self.set, now: t0)
        _ = machine.commandRequested(2, Self.get, now: t0)
        #expect(
            machine.connectionClosed("reset by peer")
                == .reconnect(
                    failing: [1, 2],
                    .connectionLost("reset by peer"),
                    after: .milliseconds(100),
                    wasReady: true
                )
        )
        // While it waits to reconnect, commands fail at once: the caller decides what to do without the store.
        #expect(
            machine.commandRequested(3, Self.get, now: t0) == .fail([3], .unavailable("connection lost: reset by peer"))
        )
        #expect(machine.reconnectDue() == .connect)
        #expect(machine.commandRequested(4, Self.get, now: t0) == .none)
        #expect(machine.connected(now: t0) == .becomeReady(write: [Self.get]))
    }

    @Test func failedAttemptsBackOffExponentiallyUpToFiveSecondsAndResetOnceReady() {
        var machine = Self.machine()
        _ = machine.started()
        var delays: [Duration] = []
        for _ in 0..<9 {
            guard case .reconnect(_, _, let delay, false) = machine.connectFailed(.connect(.connectFailed("refused")))
            else {
                Issue.record("expected a reconnect")
                return
            }
            delays.append(delay)
            #expect(machine.reconnectDue() == .connect)
        }
        #expect(delays.map { Int($0.milliseconds) } == [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000])
        #expect(machine.connected(now: t0) == .becomeReady(write: []))
        #expect(
            machine.connectionClosed("closed")
                == .reconnect(failing: [], .connectionLost("closed"), after: .milliseconds(100), wasReady: true)
        )
    }

    @Test func anUnansweredCommandPastTheTimeoutDropsTheConnection() {
        var machine = Self.machine(timeout: .seconds(2))
        _ = machine.started()
        _ = machine.connected(now: t0)
        _ = machine.commandRequested(1, Self.get, now: t0)
        _ = machine.commandRequested(2, Self.get, now: t0 + .seconds(1))
        #expect(machine.nextDeadline == t0 + .seconds(2))
        #expect(machine.deadlinePassed(now: t0 + .milliseconds(1999)) == .none)
        #expect(
            machine.deadlinePassed(now: t0 + .seconds(2))
                == .reconnect(failing: [1, 2], .noReply(after: .seconds(2)), after: .milliseconds(100), wasReady: true)
        )
        #expect(machine.nextDeadline == nil)
    }

    @Test func theDeadlineFollowsTheOldestUnansweredCommand() {
        var machine = Self.machine(timeout: .seconds(2))
        _ = machine.started()
        _ = machine.connected(now: t0)
        _ = machine.commandRequested(1, Self.get, now: t0)
        _ = machine.commandRequested(2, Self.get, now: t0 + .seconds(1))
        _ = machine.received(.integer(1), now: t0 + .milliseconds(1500))
        #expect(machine.nextDeadline == t0 + .seconds(3))
        #expect(machine.deadlinePassed(now: t0 + .milliseconds(2500)) == .none)
    }

    @Test func aReplyNobodyAskedForDropsTheConnection() {
        var machine = Self.machine()
        _ = machine.started()
        _ = machine.connected(now: t0)
        #expect(
            machine.received(.simpleString("OK"), now: t0)
                == .reconnect(
                    failing: [],
                    .malformed("a reply nothing asked for"),
                    after: .milliseconds(100),
                    wasReady: true
                )
        )
    }

    @Test func bytesThatAreNotRESPDropTheConnection() {
        var machine = Self.machine()
        _ = machine.started()
        _ = machine.connected(now: t0)
        _ = machine.commandRequested(1, Self.get, now: t0)
        #expect(
            machine.receivedGarbage(.missingCRLF)
                == .reconnect(
                    failing: [1],
                    .malformed(RESPParseError.missingCRLF.message),
                    after: .milliseconds(100),
                    wasReady: true
                )
        )
    }

    @Test func aSubscriberDeliversMessagesOnceSubscribed() {
        let subscribe = RESPCommand("SUBSCRIBE", "bearer-proxy:{a}:refreshed")
        var machine = Self.machine(handshake: [Self.auth, subscribe], subscriber: true)
        _ = machine.started()
        #expect(machine.connected(now: t0) == .write([Self.auth, subscribe]))
        #expect(machine.received(.simpleString("OK"), now: t0) == .none)
        let confirmation = RESPValue.array([
            .bulkString(Array("subscribe".utf8)), .bulkString(Array("bearer-proxy:{a}:refreshed".utf8)), .integer(1),
        ])
        #expect(machine.received(confirmation, now: t0) == .becomeReady(write: []))
        let message = RESPValue.array([
            .bulkString(Array("message".utf8)), .bulkString(Array("bearer-proxy:{a}:refreshed".utf8)),
            .bulkString(Array("7".utf8)),
        ])
        #expect(
            machine.received(message, now: t0)
                == .deliver(channel: Array("bearer-proxy:{a}:refreshed".utf8), payload: Array("7".utf8))
        )
        #expect(machine.received(confirmation, now: t0) == .none)
        #expect(machine.nextDeadline == nil)
    }

    static let ping = RESPCommand("PING")

    @Test func aSilentConnectionSendsAPingAndDropsWhenItGoesUnanswered() {
        var machine = Self.machine(timeout: .seconds(2), keepalive: .seconds(10))
        _ = machine.started()
        _ = machine.connected(now: t0)
        #expect(machine.nextDeadline == t0 + .seconds(10))
        #expect(machine.deadlinePassed(now: t0 + .seconds(9)) == .none)
        #expect(machine.deadlinePassed(now: t0 + .seconds(10)) == .write([Self.ping]))
        #expect(machine.nextDeadline == t0 + .seconds(12))
        #expect(
            machine.deadlinePassed(now: t0 + .seconds(12))
                == .reconnect(failing: [], .noReply(after: .seconds(2)), after: .milliseconds(100), wasReady: true)
        )
        #expect(machine.nextDeadline == nil)
    }

    @Test func anyReplyPushesTheNextPingBack() {
        var machine = Self.machine(timeout: .seconds(2), keepalive: .seconds(10))
        _ = machine.started()
        _ = machine.connected(now: t0)
        _ = machine.commandRequested(1, Self.get, now: t0 + .seconds(4))
        _ = machine.received(.bulkString(nil), now: t0 + .seconds(5))
        #expect(machine.nextDeadline == t0 + .seconds(15))
        #expect(machine.deadlinePassed(now: t0 + .seconds(15)) == .write([Self.ping]))
        #expect(machine.received(.simpleString("PONG"), now: t0 + .seconds(16)) == .none)
        #expect(machine.nextDeadline == t0 + .seconds(26))
        // A user without +ping gets an error: the server answered, so it is there.
        #expect(machine.deadlinePassed(now: t0 + .seconds(26)) == .write([Self.ping]))
        let refusal = RESPValue.error("NOPERM this user has no permissions to run the 'ping' command")
        #expect(machine.received(refusal, now: t0 + .seconds(27)) == .none)
        #expect(machine.state == .ready)
        #expect(machine.nextDeadline == t0 + .seconds(37))
    }

    @Test func aCommandAskedForWhileAPingWaitsGetsItsOwnReply() {
        var machine = Self.machine(timeout: .seconds(2), keepalive: .seconds(10))
        _ = machine.started()
        _ = machine.connected(now: t0)
        #expect(machine.deadlinePassed(now: t0 + .seconds(10)) == .write([Self.ping]))
        #expect(machine.commandRequested(1, Self.get, now: t0 + .milliseconds(10_100)) == .write([Self.get]))
        #expect(machine.received(.simpleString("PONG"), now: t0 + .milliseconds(10_200)) == .none)
        #expect(
            machine.received(.bulkString(Array("v".utf8)), now: t0 + .milliseconds(10_300))
                == .complete(1, .success(.bulkString(Array("v".utf8))))
        )
        // No PING while reconnecting: the keepalive deadline is back only once ready again.
        _ = machine.connectionClosed("closed by the server")
        #expect(machine.nextDeadline == nil)
        #expect(machine.reconnectDue() == .connect)
        _ = machine.connected(now: t0 + .seconds(20))
        #expect(machine.nextDeadline == t0 + .seconds(30))
    }

    @Test func aMessageArrivingWhileAPingWaitsIsDeliveredNotTakenForItsReply() {
        let channel = "bearer-proxy:{a}:refreshed"
        var machine = Self.machine(
            handshake: [RESPCommand("SUBSCRIBE", channel)],
            subscriber: true,
            timeout: .seconds(2),
            keepalive: .seconds(10)
        )
        _ = machine.started()
        _ = machine.connected(now: t0)
        let confirmation = RESPValue.array([
            .bulkString(Array("subscribe".utf8)), .bulkString(Array(channel.utf8)), .integer(1),
        ])
        #expect(machine.received(confirmation, now: t0) == .becomeReady(write: []))
        #expect(machine.deadlinePassed(now: t0 + .seconds(10)) == .write([Self.ping]))
        let message = RESPValue.array([
            .bulkString(Array("message".utf8)), .bulkString(Array(channel.utf8)), .bulkString(Array("8".utf8)),
        ])
        #expect(
            machine.received(message, now: t0 + .seconds(11))
                == .deliver(channel: Array(channel.utf8), payload: Array("8".utf8))
        )
        // Still waiting for the PING's reply: its deadline holds.
        #expect(machine.nextDeadline == t0 + .seconds(12))
        // A subscribed connection answers PING with ["pong", ""].
        let pong = RESPValue.array([.bulkString(Array("pong".utf8)), .bulkString([])])
        #expect(machine.received(pong, now: t0 + .milliseconds(11_500)) == .none)
        #expect(machine.nextDeadline == t0 + .milliseconds(21_500))
    }

    @Test func stoppingFailsEverythingAndLaterCommands() {
        var machine = Self.machine(handshake: [Self.auth])
        _ = machine.started()
        _ = machine.commandRequested(1, Self.get, now: t0)
        _ = machine.connected(now: t0)
        #expect(machine.stopped() == .close(failing: [1]))
        #expect(machine.commandRequested(2, Self.get, now: t0) == .fail([2], .stopped))
        #expect(machine.connectionClosed("closed") == .none)
        #expect(machine.reconnectDue() == .none)
        #expect(machine.stopped() == .none)
    }
}
