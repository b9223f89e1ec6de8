import Glibc

/// A point on the monotonic clock, in nanoseconds.
///
/// Deadlines and timeouts use this, never the wall clock, so a clock change cannot fire or starve a
/// timer. It counts from boot (CLOCK_MONOTONIC); only differences between instants mean anything.
///
/// Public and inlinable (as `ByteBuffer` is, for the same reason): deadlines are computed on every
/// request.
public struct Instant: Comparable, Hashable, Sendable {
    public var nanoseconds: Int64

    @inlinable
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    @inlinable
    public static func < (lhs: Instant, rhs: Instant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    @inlinable
    public static func + (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &+ rhs.nanoseconds)
    }

    /// A deadline `span` after this instant (no 128-bit `Duration` arithmetic).
    @inlinable
    public static func + (lhs: Instant, rhs: TimeSpan) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &+ rhs.nanoseconds)
    }

    @inlinable
    public static func - (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &- rhs.nanoseconds)
    }

    @inlinable
    public static func - (lhs: Instant, rhs: Instant) -> Duration {
        .nanoseconds(lhs.nanoseconds &- rhs.nanoseconds)
    }

    /// Reads CLOCK_MONOTONIC.
    package static func now() -> Instant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Instant(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }
}

/// A length of monotonic time in nanoseconds: configured timeouts converted once, so that the data
/// path adds them to instants without `Duration`'s 128-bit arithmetic.
public struct TimeSpan: Comparable, Hashable, Sendable {
    public var nanoseconds: Int64

    @inlinable
    public init(_ duration: Duration) {
        self.nanoseconds = duration.nanoseconds
    }

    @inlinable
    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}

extension Duration {
    /// The whole duration in nanoseconds, saturating at Int64's bounds.
    @inlinable
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// The duration in milliseconds, as a Double (for logs and metrics).
    package var milliseconds: Double {
        Double(self.nanoseconds) / 1_000_000
    }

    /// The duration in seconds, as a Double (for logs and metrics).
    package var seconds: Double {
        Double(self.nanoseconds) / 1_000_000_000
    }
}

/// Where time comes from: the real monotonic clock, or a manual one in tests.
package protocol TimeSource: Sendable {
    func now() -> Instant
}

package struct SystemTimeSource: TimeSource {
    package init() {}
    package func now() -> Instant { Instant.now() }
}

/// Seconds since the Unix epoch, for the few places that need wall time (JWT `exp`, `/status`).
package func wallClockSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1_000_000_000
}

/// Seconds since 1970, from the system's real-time clock.
@Sendable package func wallClockEpochSeconds() -> Int64 {
    Int64(wallClockSeconds())
}

/// Milliseconds since 1970 (CLOCK_REALTIME): stored expiries are shared between machines.
package func wallClockMilliseconds() -> Int64 {
    Int64(wallClockSeconds() * 1000)
}
