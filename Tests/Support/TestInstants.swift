import BearerCore

/// The start of a test's manual time: machines and sessions driven by hand count from it.
package let t0 = Instant(nanoseconds: 1_000_000_000_000)

/// `seconds` after `t0`.
package func at(_ seconds: Double) -> Instant { t0 + .milliseconds(Int64(seconds * 1000)) }
