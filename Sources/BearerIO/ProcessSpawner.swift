import BearerCore
import CBearerLinux
import Glibc

/// Why a program could not be started: `posix_spawnp`'s error, as a sentence.
package struct SpawnFailure: Error, CustomStringConvertible {
    package var reason: String
    /// The `errno` posix_spawnp returned (ENOENT: not found; EACCES: not executable).
    package var code: Int32 = 0
    package var description: String { self.reason }
    /// What a shell's `$?` says: 127 not found, 126 found but not runnable.
    package var shellStatus: Int32 { self.code == ENOENT ? 127 : 126 }
}

/// Starts `argv` (argv[0] searched in PATH when it has no slash) the way a shell would: stdin on
/// /dev/null unless given, stdout and stderr onto the given descriptors, no other descriptor of
/// this process, no signal blocked, and
/// SIGPIPE, SIGINT, SIGTERM and SIGHUP back at their defaults (an ignored SIGPIPE survives exec, and
/// this process blocks the others for its signal thread). With `ownProcessGroup` the child leads a
/// new group, so `kill(-pid, …)` reaches everything it starts.
///
/// `environment` (`NAME=value` strings) replaces this process's for the child; `directory` is the
/// folder it starts in (default: this process's). With
/// `keepsIgnoredSignals`, only SIGPIPE (which this process ignores for itself) is reset: a signal
/// this process was started with ignored stays ignored, as for a shell's child — a program wrapped
/// under `nohup` keeps ignoring SIGHUP.
package func spawnProcess(
    _ argv: [String],
    stdin: Int32? = nil,
    stdout: Int32,
    stderr: Int32,
    environment: [String]? = nil,
    directory: String? = nil,
    ownProcessGroup: Bool = false,
    keepsIgnoredSignals: Bool = false
) throws(SpawnFailure) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let directory { cbl_spawn_add_chdir(&actions, directory) }
    if let stdin {
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    posix_spawn_file_actions_adddup2(&actions, stdout, 1)
    posix_spawn_file_actions_adddup2(&actions, stderr, 2)
    // Only the three cross: a descriptor another thread opened without O_CLOEXEC (Foundation's
    // temporary files, a library's socket) would otherwise live on in the child, holding a pipe
    // open past its writer's end or a script being written busy ('text file busy' when run).
    cbl_spawn_add_closefrom(&actions, 3)

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
    for signal in keepsIgnoredSignals ? [SIGPIPE] : [SIGPIPE, SIGINT, SIGTERM, SIGHUP] {
        sigaddset(&defaults, signal)
    }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(flags))

    // strdup'd C strings live until after posix_spawnp returns, which copies what it needs.
    let arguments = argv.map { strdup($0) } + [nil]
    defer { for argument in arguments { free(argument) } }
    let variables = environment.map { $0.map { strdup($0) } + [nil] }
    defer { for variable in variables ?? [] { free(variable) } }
    var pid: pid_t = 0
    let result =
        if var variables {
            posix_spawnp(&pid, argv[0], &actions, &attributes, arguments, &variables)
        } else {
            posix_spawnp(&pid, argv[0], &actions, &attributes, arguments, environ)
        }
    guard result == 0 else { throw SpawnFailure(reason: String(cString: strerror(result)), code: result) }
    return pid
}

/// How a child ended, as `waitid` reports it.
package enum ChildTermination: Equatable, Sendable {
    case exited(status: Int32)
    case killed(signal: Int32)

    /// How child `pid` ended, from waitid(2), which leaves it unreaped (`WNOWAIT`) and blocks until
    /// it ends unless `flags` holds `WNOHANG`; nil while it runs (`WNOHANG`), or when it is no child
    /// to wait for (reaped already).
    package init?(waitingFor pid: pid_t, flags: Int32 = 0) {
        var info = siginfo_t()
        let result = try? SystemCall.blocking("waitid") { waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT | flags) }
        guard result == 0, info._sifields._sigchld.si_pid == pid else { return nil }
        let status = info._sifields._sigchld.si_status
        self = info.si_code == CLD_EXITED ? .exited(status: status) : .killed(signal: status)
    }

    /// What a shell's `$?` says: the status, or 128 + the signal's number.
    package var shellStatus: Int32 {
        switch self {
        case .exited(let status): status
        case .killed(let signal): 128 + signal
        }
    }
}

/// Blocks until `pid` has ended, and leaves it unreaped (a zombie): until `reapChild(pid)`, its PID
/// cannot be given to another process, so a signal sent to it meanwhile cannot reach a stranger.
package func waitUntilChildEnds(_ pid: pid_t) -> ChildTermination {
    guard let termination = ChildTermination(waitingFor: pid) else {
        preconditionFailure("waitid(\(pid)) failed: \(String(cString: strerror(errno)))")
    }
    return termination
}

/// Reaps a child `waitUntilChildEnds` saw end.
package func reapChild(_ pid: pid_t) {
    var status: Int32 = 0
    _ = try? SystemCall.blocking("waitpid") { waitpid(pid, &status, 0) }
}
