import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerSession

/// The watcher looks at refresh_token_file twice a second, and not once after it stopped.
@Suite struct RefreshTokenFileWatcherTests {
    /// On the session's manual clock: a look every 500 ms, one at a time, and no timer once stopped.
    @Test func theWatcherLooksTwiceASecondUntilItIsStopped() {
        let clock = ManualTimerScheduler()
        let looks = Locked(0)
        let watcher = RefreshTokenFileWatcher(scheduler: clock, clock: clock, pool: .shared) {
            looks.withLock { $0 += 1 }
        }
        let start = clock.now()
        watcher.start()
        #expect(clock.nextDeadline == start + .milliseconds(500))
        clock.advance(by: .milliseconds(499))
        #expect(looks.withLock { $0 } == 0)
        clock.advance(by: .milliseconds(1))
        // The look runs on the blocking pool; the next tick is armed once it is back.
        #expect(waitUntil { clock.nextDeadline == start + .milliseconds(1000) })
        #expect(looks.withLock { $0 } == 1)
        #expect(clock.timerCount == 1, "one look at a time")
        watcher.stop()
        #expect(clock.timerCount == 0)
        clock.advance(by: .seconds(5))
        #expect(looks.withLock { $0 } == 1)
    }
}
