import BearerCore

/// What a session answers the data path, about a request to send or a response that refused its
/// token: the one vocabulary across the seam between a connection and its session (`SessionPort`).
package enum TokenAnswer: Equatable, Sendable {
    /// Send now, with this token (nil: the session has none and no way to get one; send without).
    case send(SessionToken?)
    /// Wait: the session tells the waiter later, once, with `.send` or `.fail` (`TokenWaiter`).
    case wait(Ticket)
    /// No token can be had now: the client is answered with this.
    case fail(SessionFailure)
    /// The upstream's refusal goes to the client as it is (only an answer to a refusal): the
    /// request cannot be sent again, or the storm guard holds, or nothing can refresh.
    case passThrough
}

/// A token as a request carries it: its `Authorization` line (`Bearer`, or `DPoP` for a DPoP-bound
/// token, whose proof the data path adds), and the generation the request is stamped with.
package struct SessionToken: Equatable, Sendable {
    package var line: [UInt8]
    package var generation: Int

    package init(line: [UInt8], generation: Int) {
        self.line = line
        self.generation = generation
    }
}

/// A request's place in its session's queue while it waits for a token.
package struct Ticket: Hashable, Sendable {
    package var id: UInt64

    package init(_ id: UInt64) {
        self.id = id
    }
}

/// Who waits with a ticket: told once, on its own loop, how the wait ended.
package protocol TokenWaiter: AnyObject {
    func tokenReady(_ ticket: Ticket, _ answer: TokenAnswer)
}
