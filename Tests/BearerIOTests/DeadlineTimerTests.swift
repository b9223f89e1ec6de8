import BearerCore
import Testing

@testable import BearerIO

/// One timer at or before a deadline that moves, on a manual clock.
@Suite struct DeadlineTimerTests {
    final class Owner {
        let clock = ManualTimerScheduler()
        var timer = DeadlineTimer()
        var firedAt: [Duration] = []
        let start: Instant

        init() { self.start = self.clock.now() }

        func arm(at offset: Duration) {
            self.timer.arm(at: self.start + offset, on: self.clock) {
                self.timer.fired()
                self.firedAt.append(self.clock.now() - self.start)
            }
        }
    }

    @Test func anEarlierDeadlineMovesTheTimerALaterOneKeepsIt() {
        let owner = Owner()
        owner.arm(at: .seconds(10))
        owner.arm(at: .seconds(5))
        #expect(owner.clock.timerCount == 1, "moved, not added")
        #expect(owner.timer.deadline == owner.start + .seconds(5))
        owner.arm(at: .seconds(8))
        #expect(owner.timer.deadline == owner.start + .seconds(5), "a later deadline keeps the armed timer")
        owner.clock.advance(by: .seconds(10))
        #expect(owner.firedAt == [.seconds(5)])
        #expect(owner.timer.deadline == nil)
        owner.arm(at: .seconds(12))
        #expect(owner.clock.timerCount == 1, "after it fired, the next arm schedules anew")
    }

    @Test func aCancelledTimerDoesNotFire() {
        let owner = Owner()
        owner.arm(at: .seconds(1))
        owner.timer.cancel(on: owner.clock)
        owner.clock.advance(by: .seconds(2))
        #expect(owner.firedAt.isEmpty)
        #expect(owner.clock.timerCount == 0)
    }
}

@Suite struct ManualTimerSchedulerTests {
    @Test func advancingFiresEachTimerAtItsDeadlineInOrder() {
        let clock = ManualTimerScheduler()
        let start = clock.now()
        var fired: [(String, Duration)] = []
        clock.schedule(at: start + .seconds(3)) { fired.append(("c", clock.now() - start)) }
        clock.schedule(at: start + .seconds(1)) {
            fired.append(("a", clock.now() - start))
            // A timer set by a timer fires in the same advance when it is due by its end.
            clock.schedule(at: clock.now() + .seconds(1)) { fired.append(("b", clock.now() - start)) }
        }
        let late = clock.schedule(at: start + .seconds(4)) { fired.append(("cancelled", clock.now() - start)) }
        clock.cancel(late)
        clock.advance(by: .seconds(5))
        #expect(fired.map(\.0) == ["a", "b", "c"])
        #expect(fired.map(\.1) == [.seconds(1), .seconds(2), .seconds(3)])
        #expect(clock.now() == start + .seconds(5))
        #expect(clock.timerCount == 0)
    }
}
