import BearerCore

/// Refresh figures, kept by the token session under its lock.
package struct SessionMetrics: Sendable {
    /// By result: ok, adopted (another proxy's, from the session store), rejected, unreachable, timeout,
    /// rate_limited, logged_out, command_failed, no_refresh_token (none to spend: the endpoint was not
    /// called), kept.
    package var refreshes: [String: Int] = [:]
    package var refreshDuration = Histogram()
}
