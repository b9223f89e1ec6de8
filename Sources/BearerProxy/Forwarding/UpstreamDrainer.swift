import BearerCore
import BearerHTTP
import BearerIO

/// Reads and discards the rest of a response nobody will forward (a 401 answered by a refresh), then
/// returns the connection to the pool: reconnecting on every expired token would turn a refresh storm
/// into a connection storm. Gives up (closes) on anything unusual. Confined to its loop.
final class UpstreamDrainer: UpstreamConnectionOwner {
    /// Weak: the connection owns its drainer (as its owner), not the other way round.
    private weak var upstreamConnection: UpstreamConnection?
    private var upstream: UpstreamConnection { self.upstreamConnection! }
    private let pool: UpstreamPool
    private var timer: TimerID?
    private var discarded = 0

    /// Responses bigger than this are not worth reading to keep the connection.
    static let maximumBytes = 256 * 1024
    static let timeout: Duration = .seconds(2)

    static func drain(_ upstream: UpstreamConnection, pool: UpstreamPool, reusable: Bool) {
        guard reusable, upstream.isOpen else {
            upstream.close()
            return
        }
        let drainer = UpstreamDrainer(upstream: upstream, pool: pool)
        upstream.owner = drainer
        drainer.timer = upstream.stream.loop.schedule(after: Self.timeout) { [weak drainer] in drainer?.giveUp() }
        drainer.process()
    }

    private init(upstream: UpstreamConnection, pool: UpstreamPool) {
        self.upstreamConnection = upstream
        self.pool = pool
    }

    private func process() {
        guard let upstream = self.upstreamConnection, case let stream = upstream.stream else { return self.giveUp() }
        while true {
            let event: HTTPResponseParser.Event
            do throws(HTTPParseError) {
                event = try stream.inbound.parseNext { raw throws(HTTPParseError) in
                    try self.upstream.parser.next(raw)
                }
            } catch {
                return self.giveUp()
            }
            switch event {
            case .needMore:
                return
            case .head:
                return self.giveUp()
            case .body(let range):
                self.discarded += range.count
                if self.discarded > Self.maximumBytes { return self.giveUp() }
            case .end:
                self.cancelTimer()
                if stream.inbound.isEmpty {
                    let pool = self.pool
                    self.upstream.completedExchanges += 1
                    pool.release(self.upstream)
                } else {
                    self.upstream.close()
                }
                return
            }
        }
    }

    private func giveUp() {
        self.cancelTimer()
        self.upstreamConnection?.close()
    }

    private func cancelTimer() {
        if let timer = self.timer, let upstream = self.upstreamConnection { upstream.stream.loop.cancel(timer) }
        self.timer = nil
    }

    func upstreamReceived(_ upstream: UpstreamConnection) { self.process() }
    func upstreamReadEnded(_ upstream: UpstreamConnection) { self.giveUp() }
    func upstreamWritable(_ upstream: UpstreamConnection) {}
    func upstreamClosed(_ upstream: UpstreamConnection, error: IOError?) { self.giveUp() }
}

@available(*, unavailable)
extension UpstreamDrainer: Sendable {}
