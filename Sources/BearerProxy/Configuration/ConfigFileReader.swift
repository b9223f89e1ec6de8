import Glibc

/// Reads the config file's text: a regular file, or a pipe or FIFO (`--config <(pass show …)`), so a
/// configuration holding secrets never has to touch the disk.
///
/// Foundation's `String(contentsOfFile:)` sizes its read by `fstat` and fails on a pipe, so this reads
/// with plain `read` until end of file. The size is bounded: a config is a few KiB, and `/dev/zero`
/// given by mistake must not fill memory.
enum ConfigFileReader {
    static let sizeLimit = 1 << 20

    static func read(_ path: String) throws(ConfigurationError) -> String {
        var fd: Int32
        repeat {
            // Opening a FIFO waits for its writer, as `cat` does.
            fd = open(path, O_RDONLY | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw Self.failure(path, Self.errorText()) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.failure(path, errno == EISDIR ? "it is a directory" : Self.errorText())
            }
            bytes += chunk[0..<count]
            guard bytes.count <= Self.sizeLimit else {
                throw Self.failure(path, "it is larger than 1 MiB (is it the right file?)")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Self.failure(path, "not valid UTF-8 text")
        }
        return text
    }

    private static func failure(_ path: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(place: path, key: nil, message: "cannot read the config file: \(reason)")
    }

    private static func errorText() -> String {
        String(cString: strerror(errno))
    }
}
