import BearerCLI
import BearerCore
import Glibc

let status = bearerProxyMain()
// Log lines are written by a thread of their own: let it finish (for a bounded time).
LogSink.standardError.flush()
exit(status)
