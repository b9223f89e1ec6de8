import BearerCore
import Glibc

/// Waits until `condition` holds, looking every 2 ms, for at most `timeout`; returns whether it
/// held. For what another thread or process brings about (a loop's answer, a child's log line):
/// tests wait for the event, bounded, instead of sleeping before they look.
package func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let deadline = Instant.now() + timeout
    while Instant.now() < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}
