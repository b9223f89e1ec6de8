import BearerConfig

/// Why `bearer-proxy env` or `run` cannot go on; one line, printed as `Error: …` before exit 1 (127
/// or 126 for a program that cannot be started).
enum WrapError: Error, CustomStringConvertible {
    /// Every listen address is a unix socket: no client takes one as http_proxy.
    case onlyUnixSockets(place: String)
    /// `listen = 127.0.0.1:0`: the port is picked at start, so `env` cannot name it.
    case portPickedAtStart(place: String)
    /// posix_spawnp refused the program.
    case cannotStart(program: String, reason: String)

    var description: String {
        switch self {
        case .onlyUnixSockets(let place):
            "\(place): listen: a unix socket cannot be an http_proxy (clients take http://HOST:PORT): listen on 127.0.0.1:PORT too, or give --listen 127.0.0.1:PORT"
        case .portPickedAtStart(let place):
            "\(place): listen: port 0 is picked when the proxy starts, so env cannot name it: give the proxy a fixed port (bearer-proxy run starts a proxy of its own on a free port)"
        case .cannotStart(let program, let reason):
            "cannot run '\(program)': \(reason)"
        }
    }
}

extension Configuration {
    /// Where `session`'s `listen` was set (`file:line`, a flag), for the errors about it.
    func listenPlace(of session: SessionSettings) -> String {
        self.provenance.place(of: .listen, in: session.name) ?? "(default)"
    }
}
