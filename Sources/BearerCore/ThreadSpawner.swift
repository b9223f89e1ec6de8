import CBearerLinux
import Glibc

/// Starts a detached-by-default POSIX thread running `body`; join it with `joinThread`.
///
/// Event loops run on threads of their own (not Dispatch's pool) so that each loop owns exactly one
/// thread for its whole life and `inEventLoop` is a cheap comparison.
package func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        let name: String
        init(body: @escaping @Sendable () -> Void, name: String) {
            self.body = body
            self.name = name
        }
    }
    let box = Unmanaged.passRetained(Box(body: body, name: name))
    var thread = pthread_t()
    let result = pthread_create(
        &thread,
        nil,
        { context in
            let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
            _ = cbl_set_thread_name(String(box.name.prefix(15)))
            box.body()
            return nil
        },
        box.toOpaque()
    )
    precondition(result == 0, "pthread_create failed: \(result)")
    return thread
}

package func joinThread(_ thread: pthread_t) {
    pthread_join(thread, nil)
}
