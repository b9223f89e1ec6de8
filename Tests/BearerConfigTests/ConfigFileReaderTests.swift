import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerConfig

@Suite struct ConfigFileReaderTests {
    @Test func readsAPipeThroughDevFd() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let text = "upstream = http://from-a-pipe.example\n"
        #expect(write(fds[1], text, text.utf8.count) == text.utf8.count)
        close(fds[1])
        let source = ConfigurationSource(configPath: "/dev/fd/\(fds[0])")
        let config = try ConfigurationLoader.load(source, environment: [:])
        #expect(config.upstream?.description == "http://from-a-pipe.example")
    }

    struct Unreadable: CustomTestStringConvertible, Sendable {
        let id: String
        let path: @Sendable () -> String
        let reason: String
        var testDescription: String { self.id }
    }

    static let unreadable: [Unreadable] = [
        Unreadable(id: "missing", path: { "/nonexistent/proxy.conf" }, reason: "No such file or directory"),
        Unreadable(id: "directory", path: { NSTemporaryDirectory() }, reason: "it is a directory"),
        Unreadable(id: "endless", path: { "/dev/zero" }, reason: "it is larger than 1 MiB (is it the right file?)"),
        Unreadable(
            id: "binary",
            path: {
                let path = (try? ScratchSpace.newPath("binary")) ?? "/nonexistent/binary"
                // Were it not created, the reason would be a different one and the test would say so.
                _ = FileManager.default.createFile(atPath: path, contents: Data([0x75, 0xFF, 0xFE, 0x0A]))
                return path
            },
            reason: "not valid UTF-8 text"
        ),
    ]

    @Test(arguments: unreadable)
    func namesWhyAFileCannotBeRead(_ case: Unreadable) {
        let path = `case`.path()
        #expect(
            throws: ConfigurationError(place: path, key: nil, message: "cannot read the config file: \(`case`.reason)")
        ) {
            try ConfigFileReader.read(path)
        }
    }
}
