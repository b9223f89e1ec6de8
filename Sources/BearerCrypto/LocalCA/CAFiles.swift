import BearerCore
import BearerIO
import Glibc

/// The local CA's folder (ca_dir): `ca.pem` (0644), `intermediate.pem` (0644), `intermediate-key.pem`
/// (0600), `bundle.pem` (0644), the folder 0700. Blocking: used at start and by `bearer-proxy ca`,
/// never on an event loop.
///
/// Writing the three files is all or nothing, even across a crash: each is written in full and
/// flushed as `NAME.new`, then a marker `.commit` is created, then each `.new` is renamed over its
/// file, then the marker goes. Whoever opens the folder next finishes what the marker promises
/// (renames what is left) or, with no marker, deletes the `.new` files of a write that never got
/// that far. So no crash leaves a root next to another root's intermediate. The folder is `flock`ed
/// while it is read or written, so a proxy starting while `bearer-proxy ca --renew` runs sees one CA
/// or the other.
package struct CAFiles {
    let directory: String
    package var root: String { self.directory + "/ca.pem" }
    var intermediate: String { self.directory + "/intermediate.pem" }
    var key: String { self.directory + "/intermediate-key.pem" }
    package var bundle: String { self.directory + "/bundle.pem" }
    private var marker: String { self.directory + "/.commit" }

    package init(directory: String) {
        self.directory = directory
    }

    /// The three files in the order they are renamed into place: ca.pem, what clients trust, last.
    private var members: [(path: String, mode: mode_t)] {
        [(self.key, 0o600), (self.intermediate, 0o644), (self.root, 0o644)]
    }

    /// Runs `body` holding an exclusive lock on the folder, made first (0700) when it does not exist.
    package func withLock<Result>(_ body: () throws(LocalCAError) -> Result) throws(LocalCAError) -> Result {
        try Self.createDirectory(self.directory)
        let fd = open(self.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: self.directory, reason: errnoDescription()) }
        defer { close(fd) }
        do throws(SystemCallError) {
            _ = try SystemCall.blocking("flock") { flock(fd, LOCK_EX) }
        } catch {
            throw .unreadable(path: self.directory, reason: error.reason)
        }
        defer { flock(fd, LOCK_UN) }
        try self.finishInterruptedWrite()
        return try body()
    }

    /// The files' contents (root, intermediate, key); nil when none of the three exists.
    func read() throws(LocalCAError) -> (root: [UInt8], intermediate: [UInt8], key: [UInt8])? {
        let present = self.members.map { access($0.path, F_OK) == 0 }
        if !present.contains(true) { return nil }
        if let missing = self.members.indices.first(where: { !present[$0] }) {
            throw .incomplete(directory: self.directory, missing: basename(self.members[missing].path))
        }
        var info = stat()
        guard stat(self.key, &info) == 0 else { throw .unreadable(path: self.key, reason: errnoDescription()) }
        if info.st_mode & 0o077 != 0 { throw .keyReadableByOthers(path: self.key, mode: info.st_mode & 0o777) }
        return (
            try Self.contents(of: self.root), try Self.contents(of: self.intermediate), try Self.contents(of: self.key)
        )
    }

    /// Replaces the three files with `root`, `intermediate` and `key` (PEM), all or nothing.
    /// The folder becomes 0700 even when it existed with another mode.
    func write(root: [UInt8], intermediate: [UInt8], key: [UInt8]) throws(LocalCAError) {
        guard chmod(self.directory, 0o700) == 0 else {
            throw .cannotWrite(path: self.directory, reason: errnoDescription())
        }
        let contents = [key, intermediate, root]
        do throws(AtomicFile.WriteError) {
            for (member, bytes) in zip(self.members, contents) {
                try AtomicFile.writeFlushed(bytes, to: member.path + ".new", mode: member.mode)
            }
            try AtomicFile.writeFlushed([], to: self.marker, mode: 0o600)
            try AtomicFile.syncFolder(self.directory)
        } catch {
            // Nothing is renamed yet, so the old CA (if any) stays whole; what was written of the new
            // one goes now (its private key among it) rather than at the next open.
            for member in self.members { unlink(member.path + ".new") }
            unlink(self.marker)
            throw LocalCAError(error)
        }
        try self.finishInterruptedWrite()
    }

    /// Writes `bytes` to `path` through a temporary file renamed over it (bundle.pem).
    func replace(_ path: String, with bytes: [UInt8], mode: mode_t) throws(LocalCAError) {
        do throws(AtomicFile.WriteError) {
            try AtomicFile.replace(path, with: bytes, mode: mode, temporary: path + ".new")
        } catch {
            throw LocalCAError(error)
        }
    }

    /// Renames the `.new` files a committed write left behind, or deletes those of an uncommitted one.
    private func finishInterruptedWrite() throws(LocalCAError) {
        let isCommitted = access(self.marker, F_OK) == 0
        for member in self.members where access(member.path + ".new", F_OK) == 0 {
            if isCommitted {
                guard rename(member.path + ".new", member.path) == 0 else {
                    throw .cannotWrite(path: member.path, reason: errnoDescription())
                }
            } else {
                unlink(member.path + ".new")
            }
        }
        if isCommitted {
            do throws(AtomicFile.WriteError) {
                try AtomicFile.syncFolder(self.directory)
            } catch {
                throw LocalCAError(error)
            }
            unlink(self.marker)
        }
        unlink(self.bundle + ".new")
    }

    /// `mkdir -p` with mode 0700 for what it makes (XDG Base Directory: data folders are 0700). Also
    /// the DPoP key's folder.
    static func createDirectory(_ directory: String) throws(LocalCAError) {
        do throws(AtomicFile.WriteError) {
            try AtomicFile.createFolders(directory)
        } catch {
            throw .cannotCreate(path: error.path, reason: error.reason)
        }
    }

    /// A file's bytes, up to `limit` (a CA file is under a KiB; a system bundle a few hundred KiB).
    static func contents(of path: String, limit: Int = 1 << 20) throws(LocalCAError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        do throws(SystemCallError) {
            return try SystemCall.readToEnd(fd, limit: limit)
        } catch {
            throw .unreadable(path: path, reason: error.reason)
        }
    }
}

extension LocalCAError {
    init(_ error: AtomicFile.WriteError) {
        self = .cannotWrite(path: error.path, reason: error.reason)
    }
}

private func basename(_ path: String) -> String {
    String(path.split(separator: "/").last ?? Substring(path))
}

func errnoDescription() -> String {
    String(cString: strerror(errno))
}
