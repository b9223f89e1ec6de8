import BearerCore
import Glibc

/// Reads the config file's text: a regular file, or a pipe or FIFO (`--config <(pass show …)`), so a
/// configuration holding secrets never has to touch the disk.
///
/// Foundation's `String(contentsOfFile:)` sizes its read by `fstat` and fails on a pipe, so this reads
/// with plain `read` until end of file. The size is bounded: a config is a few KiB, and `/dev/zero`
/// given by mistake must not fill memory.
package enum ConfigFileReader {
    static let sizeLimit = 1 << 20

    package static func read(_ path: String) throws(ConfigurationError) -> String {
        let fd: Int32
        let bytes: [UInt8]
        do throws(SystemCallError) {
            // Opening a FIFO waits for its writer, as `cat` does.
            fd = try SystemCall.blocking("open") { open(path, O_RDONLY | O_CLOEXEC) }
        } catch {
            throw Self.failure(path, error.reason)
        }
        defer { close(fd) }
        do throws(SystemCallError) {
            bytes = try SystemCall.readToEnd(fd, limit: Self.sizeLimit)
        } catch {
            throw Self.failure(path, error.errnoCode == EISDIR ? "it is a directory" : error.reason)
        }
        guard bytes.count <= Self.sizeLimit else {
            throw Self.failure(path, "it is larger than 1 MiB (is it the right file?)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Self.failure(path, "not valid UTF-8 text")
        }
        return text
    }

    private static func failure(_ path: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(place: path, key: nil, message: "cannot read the config file: \(reason)")
    }
}
