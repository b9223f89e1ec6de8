import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

/// What a session does with DPoP beyond the proofs: a DPoP-bound token without dpop on is refused
/// with the fix in its message, and dpop with a fleet's shared session does not start.
@Suite struct DPoPSessionRulesTests {
    /// A parked request: the failure it was told, in the words the client gets.
    final class FailureWaiter: TokenWaiter, @unchecked Sendable {
        private let told = Locked<[String]>([])
        var answers: [String] { self.told.withLock { $0 } }

        func tokenReady(_ ticket: Ticket, _ answer: TokenAnswer) {
            let text =
                switch answer {
                case .send(let token): token.map { String(decoding: $0.line, as: UTF8.self) } ?? "no token"
                case .fail(let failure): "\(failure.status) \(failure.message)"
                case .wait, .passThrough: "\(answer)"
                }
            self.told.withLock { $0.append(text) }
        }
    }

    /// Before DPoP support such an answer was "without a usable access_token"; it is still refused
    /// (a bearer token the API would reject, or a bound token sent without proof), now saying why.
    /// The source decides (it knows whether it has a key to prove with): here a command, which never has.
    @Test func aDPoPBoundTokenWithDPoPOffIsRefusedNamingTheFix() {
        let clock = ManualTimerScheduler()
        let json = #"{"access_token":"dpop-bound","token_type":"DPoP","expires_in":600}"#
        // The command runs on this thread when the stepped loop settles, so the session's answer to
        // it (status, log line, the parked request's give-up timer) is in place when it returns.
        let loop = EventLoop.stepped(clock: ManualTimeSource())
        let source = CommandTokenSource(
            argv: ["/bin/echo", json],
            timeout: .seconds(5),
            pool: BlockingWorkPool(settlingOn: loop)
        )
        let logs = LogSink(capturing: ())
        let session = TokenSessionTests.session(clock, nil, logs: logs) { $0.accessToken = nil }
        session.reconfigure(TokenSupply(settings: SessionSettings(name: "default"), source: source, store: nil))
        let waiter = FailureWaiter()
        #expect(TokenSessionTests.describe(session.tokenForRequest(loop: clock, waiter: waiter)) == "parked 1")
        loop.runUntilQuiescent()
        #expect(session.status.failure != nil, "the command ran")
        clock.advance(by: .seconds(5))
        #expect(
            waiter.answers == [
                "502 bearer-proxy: token refresh failed: the token endpoint issued a DPoP-bound token; set dpop = on"
            ]
        )
        #expect(logs.capturedLines.contains { $0.contains("set dpop = on") }, "\(logs.capturedLines)")
        #expect(!logs.capturedLines.joined().contains("dpop-bound"), "the token reached the log")
    }

    @Test(arguments: [
        // The default session.
        ("session_store = redis://127.0.0.1:6379\nupstream = http://127.0.0.1:81\ndpop = on\n", 3, 1),
        // A named session with dpop on shares the file's store.
        (
            "session_store = redis://127.0.0.1:6379\n[session a]\nupstream = http://127.0.0.1:81\nmount = /a\ndpop = on\n",
            5, 1
        ),
    ])
    func dpopWithASessionStoreIsAnErrorNamingBothLines(_ keys: String, _ dpopLine: Int, _ storeLine: Int) throws {
        let folder = try ScratchSpace.newDirectory("dpop")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let text = keys.replacingOccurrences(
            of: "dpop = on\n",
            with: "dpop = on\ndpop_key_file = \(folder)/key.pem\ntoken_url = http://127.0.0.1:9/t\nclient_id = c\n"
        )
        let (_, found) = ConfigurationLoader.read(text, fileName: "p.conf", environment: [:])
        let errors = found.sortedErrors.map(\.description)
        #expect(
            errors == [
                "p.conf:\(dpopLine): dpop: cannot be combined with session_store (p.conf:\(storeLine)): a fleet's shared"
                    + " session carries neither the token's type nor the DPoP key; turn dpop off or use this session"
                    + " without session_store"
            ]
        )
        let (_, alone) = ConfigurationLoader.read(
            text.replacingOccurrences(of: "session_store = redis://127.0.0.1:6379\n", with: ""),
            fileName: "p.conf",
            environment: [:]
        )
        #expect(alone.sortedErrors.isEmpty, "\(alone.sortedErrors)")
    }
}
