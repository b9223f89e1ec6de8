import BearerCore
import BearerIO
import Glibc
import Synchronization

/// The refresh token: in memory, and in `refresh_token_file` when one is configured.
///
/// A rotated refresh token is single-use, and several processes may share the file. So a refresh
/// holds an exclusive `flock` on `<file>.lock` from before it reads the token until after it wrote the
/// rotated one, and re-reads the file first: if another process rotated it meanwhile, that token is
/// used instead of spending the old one again. Writes go to a temporary file (mode 0600) renamed over
/// the old one, so a crash leaves either the old or the new token, never half of one. The lock is on
/// a separate file because rename replaces the token file's inode. That file is never removed (see
/// `lockPath(for:)`). Blocking: call off the event loops.
///
/// Under `credential_store = secret-service` the token is a keyring item instead of a file
/// (`keyring`, `path` nil): the same lock, on a file beside where the token file would be, and the
/// item re-read after taking it.
package final class RefreshTokenStore: Sendable {
    package let path: String?
    /// The keyring item that holds the token, instead of a file.
    package let keyring: KeyringRefreshToken?
    /// The file every process sharing the token locks across a refresh.
    package let lockFile: String?
    /// Which store and why (`CredentialStoreChoice.summary`), for the start-up line.
    package let origin: String
    private struct State {
        var token: Secret<String>?
        var stamp: FileStamp?
        var lastChangeCheck: Instant?
    }

    private let state: Locked<State>

    /// What identifies one version of the file: inode, size and modification time.
    struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    package struct StoreError: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    package init(token: Secret<String>?, path: String?, origin: String = "file") throws(StoreError) {
        self.path = path
        self.keyring = nil
        self.lockFile = path.map(Self.lockPath(for:))
        self.origin = origin
        self.state = Locked(State(token: token))
        if let path {
            let (token, stamp) = try Self.read(path)
            self.state.withLock {
                $0.token = token
                $0.stamp = stamp
            }
        }
    }

    /// The token in `keyring`, read now; `lockFile` locked across each refresh (its folder made then).
    package init(keyring: KeyringRefreshToken, lockFile: String, origin: String) throws(StoreError) {
        self.path = nil
        self.keyring = keyring
        self.lockFile = lockFile
        self.origin = origin
        self.state = Locked(State(token: try keyring.read()))
    }

    /// Where the token is kept, as `/status` and the start-up line name it.
    package var storeName: String {
        self.keyring == nil ? "file" : "secret-service"
    }

    package var current: Secret<String>? {
        self.state.withLock { $0.token }
    }

    /// A held refresh: the token to spend, and the lock (when there is a file).
    package struct Lease: Sendable {
        package var token: Secret<String>?
        fileprivate var lockFD: Int32?
        /// Why the keyring item could not be read after taking the lock: the refresh must then fail
        /// rather than spend the token in memory, which another process may have rotated away, and
        /// whose successor could not be stored either.
        package var unreadable: String?
    }

    /// `<file>.lock`, the file every process sharing the token file `flock`s across a refresh.
    ///
    /// It is left in place for good, `bearer-proxy logout` included. A lock file removed while another
    /// process holds it, or waits for it, splits the lock: the next process creates and locks a new
    /// file at the path while the first still holds the old inode, so both refresh with one
    /// single-use refresh token, and the provider's reuse detection ends the session. Lockers could
    /// check after `flock` that the path still names the inode they locked, but an older bearer-proxy
    /// still running, or a script of the user's taking the same lock, would not: an empty file is the
    /// smaller cost.
    package static func lockPath(for path: String) -> String {
        path + ".lock"
    }

    /// Locks the file and returns the refresh token to spend: the file's, if another process rotated it.
    package func beginRefresh() -> Lease {
        guard let lockFile = self.lockFile else { return Lease(token: self.current, lockFD: nil) }
        if self.keyring != nil { try? AtomicFile.createFolders(AtomicFile.folder(of: lockFile)) }
        let fd = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { _ = try? SystemCall.blocking("flock") { flock(fd, LOCK_EX) } }
        // Another process may have rotated the item meanwhile.
        var unreadable: String?
        if let keyring = self.keyring {
            do throws(StoreError) {
                let token = try keyring.read()
                self.state.withLock { $0.token = token }
            } catch {
                unreadable = error.description
            }
        }
        if let path = self.path, let (token, stamp) = try? Self.read(path) {
            self.state.withLock {
                $0.token = token
                $0.stamp = stamp
            }
        }
        return Lease(token: self.current, lockFD: fd >= 0 ? fd : nil, unreadable: unreadable)
    }

    /// Stores a rotated token (when there is one) and releases the lock.
    package func endRefresh(_ lease: Lease, rotated: Secret<String>?) throws(StoreError) {
        defer {
            if let fd = lease.lockFD {
                flock(fd, LOCK_UN)
                close(fd)
            }
        }
        guard let rotated, rotated != lease.token else { return }
        self.state.withLock { $0.token = rotated }
        if let keyring = self.keyring { try keyring.write(rotated) }
        guard let path = self.path else { return }
        try Self.writeAtomically(rotated.reveal() + "\n", to: path)
        let stamp = Self.stamp(path)
        self.state.withLock { $0.stamp = stamp }
    }

    /// `endRefresh`, logging instead of throwing: a refresh that got a token still serves the
    /// requests waiting for it when the rotated refresh token cannot be written.
    package func endRefresh(_ lease: Lease, rotated: Secret<String>?, logger: Logger) {
        do throws(StoreError) {
            try self.endRefresh(lease, rotated: rotated)
        } catch {
            logger.error("cannot store the rotated refresh token", ["error": error.description])
        }
    }

    /// Takes the fleet's refresh token (from the session store): in memory, and in the file under its
    /// lock, so the next refresh here (and a restart without the store) spends the newest one.
    package func replace(with token: Secret<String>, logger: Logger) {
        guard token != self.current else { return }
        // Under the file lock, as a refresh: a process on this machine refreshing right now finishes first.
        self.endRefresh(self.beginRefresh(), rotated: token, logger: logger)
    }

    /// Whether the file changed since this process last read or wrote it; checked at most once a second.
    package func fileChanged(now: Instant) -> Bool {
        guard let path = self.path else { return false }
        let due = self.state.withLock { state -> Bool in
            if let last = state.lastChangeCheck, now - last < .seconds(1) { return false }
            state.lastChangeCheck = now
            return true
        }
        guard due else { return false }
        let stamp = Self.stamp(path)
        let known = self.state.withLock { $0.stamp }
        guard stamp != nil, stamp != known else { return false }
        return (try? self.reload()) != nil
    }

    /// Re-reads the file (SIGHUP, a change noticed).
    @discardableResult
    package func reload() throws(StoreError) -> Bool {
        if let keyring = self.keyring {
            let token = try keyring.read()
            self.state.withLock { $0.token = token }
            return true
        }
        guard let path = self.path else { return false }
        let (token, stamp) = try Self.read(path)
        self.state.withLock {
            $0.token = token
            $0.stamp = stamp
        }
        return true
    }

    /// Deletes the keyring item (logout); whether there was one. A file store has none.
    package func deleteKeyringItem() throws(StoreError) -> Bool {
        guard let keyring = self.keyring else { return false }
        return try keyring.delete()
    }

    /// Drops the token from memory (logout); returns it. The file, if any, is left alone.
    package func forget() -> Secret<String>? {
        self.state.withLock { state in
            let token = state.token
            state.token = nil
            return token
        }
    }

    // MARK: File access

    /// The token in the file; none when the file does not exist (yet: `bearer-proxy login` writes it)
    /// or holds nothing. Anything else at the path (a directory, a pipe, a file this user may not
    /// read) is an error naming it: that is a local mistake to fix, never a missing token.
    static func read(_ path: String) throws(StoreError) -> (Secret<String>?, FileStamp?) {
        // O_NONBLOCK: opening a FIFO put at the path must not wait for a writer.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        // ENOTDIR: the folder is not one, so no file is there either (`requireFolder` names it).
        if fd < 0 && (errno == ENOENT || errno == ENOTDIR) { return (nil, nil) }
        guard fd >= 0 else { throw Self.cannotRead(path, errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.cannotRead(path, errno) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw Self.cannotRead(path, EISDIR)
        default: throw StoreError(description: "\(path): cannot read the refresh token file: not a regular file")
        }
        let bytes: [UInt8]
        do throws(SystemCallError) {
            bytes = try SystemCall.readToEnd(fd, limit: 1 << 20, sizeHint: Int(info.st_size))
        } catch {
            throw Self.cannotRead(path, error.errnoCode)
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
        return (text.isEmpty ? nil : Secret(text), Self.stamp(path))
    }

    private static func cannotRead(_ path: String, _ error: Int32) -> StoreError {
        StoreError(description: "\(path): cannot read the refresh token file: \(String(cString: strerror(error)))")
    }

    /// The folder the file lives in: a file that does not exist yet is normal (a login writes it), a
    /// folder that does not exist is a wrong path, and the proxy stops at start naming it.
    package func requireFolder() throws(StoreError) {
        guard let path = self.path, let problem = Self.folderProblem(path) else { return }
        throw StoreError(description: "\(path): refresh_token_file: \(problem) (create it, or fix the path)")
    }

    /// Why there is no refresh token to spend, for the 401 and the log line. Always something on this
    /// machine (the token endpoint was not asked), so it names the file. Blocking: a `stat` and a read.
    package func absenceReason() -> String {
        if let keyring = self.keyring {
            return "there is no \(keyring.description) (bearer-proxy login stores one)"
        }
        guard let path = self.path else { return "the configured refresh_token was dropped by a logout" }
        do throws(StoreError) {
            if try Self.read(path).1 != nil { return "\(path) is empty" }
        } catch {
            return error.description
        }
        return Self.folderProblem(path) ?? "\(path) does not exist yet"
    }

    /// `its folder … does not exist` (or is not a directory); nil when the folder is there.
    private static func folderProblem(_ path: String) -> String? {
        let folder = AtomicFile.folder(of: path)
        var info = stat()
        guard stat(folder, &info) == 0 else { return "its folder \(folder) does not exist" }
        return info.st_mode & S_IFMT == S_IFDIR ? nil : "its folder \(folder) is not a directory"
    }

    static func stamp(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modifiedSeconds: info.st_mtim.tv_sec,
            modifiedNanoseconds: info.st_mtim.tv_nsec
        )
    }

    /// The rotated token replaces the file whole (`AtomicFile`, mode 0600). The temporary file's
    /// name carries the PID: a process that died mid-write leaves its own, never one another uses.
    static func writeAtomically(_ contents: String, to path: String) throws(StoreError) {
        do throws(AtomicFile.WriteError) {
            try AtomicFile.replace(path, with: Array(contents.utf8), mode: 0o600, temporary: "\(path).tmp.\(getpid())")
        } catch {
            throw StoreError(description: "\(path): cannot write the rotated refresh token: \(error.reason)")
        }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
