import BearerCore
import Glibc

/// Files replaced so that a crash leaves the old contents or the new, never a part of either: the
/// rotated refresh token, the local CA's files.
///
/// The new contents go to a temporary file beside the old one, created anew with exactly the mode
/// asked for (whatever the umask: a key file is 0600 from its first byte), written in full and
/// flushed to disk; then renamed over the old file, and the folder flushed so that the rename
/// survives a crash too. Blocking: never on an event loop.
package enum AtomicFile {
    /// Why a file could not be written: the file (or folder) that failed, and the system's words.
    package struct WriteError: Error, Equatable, Sendable {
        package var path: String
        package var reason: String
    }

    /// Writes `bytes` to `temporary`, then renames it over `path`.
    package static func replace(
        _ path: String,
        with bytes: [UInt8],
        mode: mode_t,
        temporary: String
    ) throws(WriteError) {
        try Self.writeFlushed(bytes, to: temporary, mode: mode)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw WriteError(path: path, reason: reason)
        }
        // Best effort: a folder this user may not read cannot be flushed, and the rename stands anyway.
        try? Self.syncFolder(Self.folder(of: path))
    }

    /// Creates `path` (replacing a leftover; a link there is not followed) with exactly `mode`, writes
    /// all of `bytes`, and flushes them to disk. The first half of `replace`, for a caller that
    /// renames several files at once (the CA's commit).
    package static func writeFlushed(_ bytes: [UInt8], to path: String, mode: mode_t) throws(WriteError) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WriteError(path: path, reason: String(cString: strerror(errno))) }
        var failure: SystemCallError?
        do throws(SystemCallError) {
            try SystemCall.writeAll(fd, bytes)
            _ = try SystemCall.blocking("fchmod") { fchmod(fd, mode) }
            _ = try SystemCall.blocking("fsync") { fsync(fd) }
        } catch {
            failure = error
        }
        close(fd)
        if let failure {
            unlink(path)
            throw WriteError(path: path, reason: failure.reason)
        }
    }

    /// Flushes a folder's entries to disk (a rename, a new file).
    package static func syncFolder(_ folder: String) throws(WriteError) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw WriteError(path: folder, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        fsync(fd)
    }

    /// `mkdir -p` with mode 0700 for the folders it makes (XDG Base Directory: data folders are 0700):
    /// the CA's, the DPoP key's and a login's refresh-token file's. The error names the folder that
    /// could not be made.
    package static func createFolders(_ folder: String) throws(WriteError) {
        var prefix = folder.hasPrefix("/") ? "" : "."
        for component in folder.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw WriteError(path: prefix, reason: String(cString: strerror(errno)))
            }
        }
    }

    /// The folder `path` lives in: "." for a bare name, "/" for a file at the root.
    package static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }
}
