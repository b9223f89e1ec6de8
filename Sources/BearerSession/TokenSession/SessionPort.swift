import BearerCore
import BearerIO

/// One session as the connections of one event loop meet it: the token to send, or a ticket to wait
/// with; what the upstream said of a token.
///
/// While a token simply works, a request costs one atomic load and a clock read: the port keeps the
/// token of the session's current free-token epoch and uses it without the session's lock while
/// that epoch stands. Otherwise the session decides (its state machine, under its lock). A token
/// that worked is reported once per generation and epoch, so acceptance too stays off the lock.
/// Confined to its loop.
package final class SessionPort {
    package let session: TokenSession
    private let loop: any TimerScheduler
    /// The token of epoch `epoch`, usable without asking until `usableUntil` (nil: for as long as
    /// the epoch stands).
    private(set) var epoch = 0
    private(set) var token = SessionToken(line: [], generation: 0)
    private(set) var usableUntil: Instant?
    /// The generation last reported as accepted, and the epoch it was reported in.
    private var acceptedGeneration = 0
    private var acceptedEpoch = -1

    /// `loop` is where the connections using this port run: waiters are told there.
    package init(_ session: TokenSession, loop: any TimerScheduler) {
        self.session = session
        self.loop = loop
    }

    /// The token for a request about to be sent to an injected host.
    package func tokenForRequest(_ waiter: TokenWaiter) -> TokenAnswer {
        let epoch = self.session.freeTokenEpoch
        if epoch != 0 && epoch == self.epoch {
            guard let until = self.usableUntil else { return .send(self.token) }
            if self.session.clock.now() < until { return .send(self.token) }
        }
        let (answer, free) = self.session.answerRequest(waiter, on: self.loop)
        if let free, case .send(let token?) = answer {
            self.epoch = free.epoch
            self.token = token
            self.usableUntil = free.usableUntil
        }
        return answer
    }

    /// The upstream answered a status in refresh_on to a request that carried the token of
    /// `generation` (a `SessionToken`'s). `canWait`: the request can be sent again (its body was
    /// kept). The answer is `.send` (a newer token: send again now), `.wait`, `.fail`, or `.passThrough`.
    ///
    /// The generation, not the token, here and in `upstreamAccepted`: it is all the session needs,
    /// and a token kept to report it is a retain and a release of its line per response.
    package func upstreamRejected(generation: Int, canWait: Bool, _ waiter: TokenWaiter) -> TokenAnswer {
        self.session.answerRejection(of: generation, canWait: canWait, waiter, on: self.loop)
    }

    /// The upstream answered a status not in refresh_on to a request that carried the token of
    /// `generation`: the storm guard's "it worked". Reported to the session once per generation and epoch.
    package func upstreamAccepted(generation: Int) {
        let epoch = self.session.freeTokenEpoch
        if generation == self.acceptedGeneration && epoch == self.acceptedEpoch { return }
        self.reportAccepted(generation, epoch: epoch)
    }

    private func reportAccepted(_ generation: Int, epoch: Int) {
        self.acceptedGeneration = generation
        self.acceptedEpoch = epoch
        self.session.upstreamAccepted(generation: generation)
    }

    /// A waiting request's client went away.
    package func cancel(_ ticket: Ticket) {
        self.session.cancel(ticket)
    }
}

@available(*, unavailable)
extension SessionPort: Sendable {}
