import Glibc

/// Why a program could not be started: `posix_spawnp`'s error, as a sentence.
package struct SpawnFailure: Error, CustomStringConvertible {
    package var reason: String
    package var description: String { self.reason }
}

/// Starts `argv` (argv[0] searched in PATH when it has no slash) the way a shell would: stdin on
/// /dev/null, stdout and stderr onto the given descriptors, no signal blocked, and SIGPIPE, SIGINT,
/// SIGTERM and SIGHUP back at their defaults (an ignored SIGPIPE survives exec, and this process
/// blocks the others for its signal thread). With `ownProcessGroup` the child leads a new group, so
/// `kill(-pid, …)` reaches everything it starts.
package func spawnProcess(
    _ argv: [String],
    stdout: Int32,
    stderr: Int32,
    ownProcessGroup: Bool = false
) throws(SpawnFailure) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, stdout, 1)
    posix_spawn_file_actions_adddup2(&actions, stderr, 2)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
    if ownProcessGroup {
        posix_spawnattr_setpgroup(&attributes, 0)
        flags |= POSIX_SPAWN_SETPGROUP
    }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(flags))

    // strdup'd C strings live until after posix_spawnp returns, which copies what it needs.
    let arguments = argv.map { strdup($0) } + [nil]
    defer { for argument in arguments { free(argument) } }
    var pid: pid_t = 0
    let result = posix_spawnp(&pid, argv[0], &actions, &attributes, arguments, environ)
    guard result == 0 else { throw SpawnFailure(reason: String(cString: strerror(result))) }
    return pid
}
