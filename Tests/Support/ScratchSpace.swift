import Foundation
import Glibc
import Synchronization

/// The one place a test process (or the bench) keeps its temporary files, folders and unix socket
/// paths: a folder of its own, made with mkdtemp under the temporary folder (`TMPDIR`, else /tmp) on
/// first use and removed with everything in it when the process exits, so that running the tests a
/// few times does not fill the user's /tmp. `.ci/test` gives each run a fresh `TMPDIR` and fails
/// naming any `bearer*` entry left in it: a helper writing past this folder, or an exit that skipped
/// the removal, shows there.
///
/// Its path is short (`$TMPDIR/bearer-XXXXXX`): a unix socket's path must fit the 108 bytes of
/// `sun_path`. Removal runs from `atexit`, which `exit` (the end of `swift test --disable-xctest`,
/// and of `bearer-bench`) runs; a process killed by a signal skips it unless it catches the signal
/// and calls `removeAll()` (the bench does).
package enum ScratchSpace {
    /// Why the folder (or a folder in it) could not be made: the temporary folder is missing or not
    /// writable, or the disk is full.
    package struct Failure: Error, CustomStringConvertible {
        package var path: String
        package var reason: String
        package var description: String { "cannot create the temporary folder \(self.path): \(self.reason)" }
    }

    /// This process's folder, made on first use (with the exit-time removal registered).
    package static func directory() throws(Failure) -> String {
        try Self.root.owned.get()
    }

    /// A new empty folder in it, mode 0700; `name` only makes it recognisable.
    package static func newDirectory(_ name: String) throws(Failure) -> String {
        let path = try Self.newPath(name)
        guard mkdir(path, 0o700) == 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        return path
    }

    /// A path in it that nothing in this process was given before, nothing created there: for a file
    /// or a unix socket the caller (or the program it starts) creates.
    package static func newPath(_ name: String) throws(Failure) -> String {
        "\(try Self.directory())/\(Self.counter.add(1, ordering: .relaxed).newValue)-\(name)"
    }

    /// Removes the folder and everything in it, if this process made it (a forked child that exits
    /// must not remove its parent's). Runs at exit; also callable from a signal's handling thread.
    package static func removeAll() {
        guard case .success(let path) = Self.root.owned, getpid() == Self.root.owner else { return }
        Self.removeTree(path)
    }

    private static let counter = Atomic<Int>(0)

    private static let root: (owned: Result<String, Failure>, owner: pid_t) = {
        let base = NSTemporaryDirectory()
        var template = Array(((base.hasSuffix("/") ? base : base + "/") + "bearer-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else {
            return (.failure(Failure(path: base, reason: String(cString: strerror(errno)))), getpid())
        }
        atexit { ScratchSpace.removeAll() }
        return (
            .success(String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)),
            getpid()
        )
    }()

    /// Depth first, without following links; a folder is made readable and writable first, so that
    /// what a test locked away goes too.
    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        chmod(path, 0o700)
        if let folder = opendir(path) {
            var names: [String] = []
            while let entry = readdir(folder) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(folder)
            for name in names { Self.removeTree(path + "/" + name) }
        }
        rmdir(path)
    }
}
