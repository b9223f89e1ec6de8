import BearerCore
import BearerTestSupport
import Foundation
import Glibc
import Testing

@testable import BearerSession

/// What is at refresh_token_file, and what the proxy makes of it: a token, a file not written yet
/// (normal: `bearer-proxy login` writes it), or a path that can never hold one (a local mistake,
/// named with the path). None of it is ever a server's answer.
@Suite struct RefreshTokenStoreTests {
    let folder: String

    init() throws {
        self.folder = try ScratchSpace.newDirectory("rts")
    }

    @Test func aFileNotWrittenYetHoldsNoTokenAndSaysSo() throws {
        let path = self.folder + "/refresh_token"
        let store = try RefreshTokenStore(token: nil, path: path)
        #expect(store.current == nil)
        try store.requireFolder()
        #expect(store.absenceReason() == "\(path) does not exist yet")
        #expect(
            SessionFailure.noRefreshToken(in: store).message
                == "bearer-proxy: no refresh token yet: \(path) does not exist yet; run 'bearer-proxy login' (a running proxy picks the new file up by itself)"
        )
        #expect(SessionFailure.noRefreshToken(in: store).status == 401)
    }

    @Test func anEmptyFileHoldsNoToken() throws {
        let path = self.folder + "/refresh_token"
        try " \n".write(toFile: path, atomically: true, encoding: .utf8)
        let store = try RefreshTokenStore(token: nil, path: path)
        #expect(store.current == nil)
        #expect(store.absenceReason() == "\(path) is empty")
    }

    @Test func aFolderThatDoesNotExistIsNamed() throws {
        let missing = self.folder + "/not-made"
        let path = missing + "/refresh_token"
        let store = try RefreshTokenStore(token: nil, path: path)
        #expect(
            throws: RefreshTokenStore.StoreError(
                description:
                    "\(path): refresh_token_file: its folder \(missing) does not exist (create it, or fix the path)"
            )
        ) { try store.requireFolder() }
        // The folder went away after the start: the 401 says so.
        #expect(store.absenceReason() == "its folder \(missing) does not exist")
    }

    @Test func aFolderThatIsAFileIsNamed() throws {
        let notAFolder = self.folder + "/plain-file"
        try "x".write(toFile: notAFolder, atomically: true, encoding: .utf8)
        let path = notAFolder + "/refresh_token"
        let store = try RefreshTokenStore(token: nil, path: path)
        #expect(
            throws: RefreshTokenStore.StoreError(
                description:
                    "\(path): refresh_token_file: its folder \(notAFolder) is not a directory (create it, or fix the path)"
            )
        ) { try store.requireFolder() }
        #expect(store.absenceReason() == "its folder \(notAFolder) is not a directory")
    }

    @Test func aDirectoryAtThePathCannotBeRead() throws {
        let path = self.folder + "/refresh_token"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(
            throws: RefreshTokenStore.StoreError(
                description: "\(path): cannot read the refresh token file: Is a directory"
            )
        ) { try RefreshTokenStore(token: nil, path: path) }
    }

    @Test func aPipeAtThePathIsRefusedWithoutWaitingForAWriter() throws {
        let path = self.folder + "/refresh_token"
        try #require(mkfifo(path, 0o600) == 0)
        #expect(
            throws: RefreshTokenStore.StoreError(
                description: "\(path): cannot read the refresh token file: not a regular file"
            )
        ) { try RefreshTokenStore(token: nil, path: path) }
    }

    @Test func theTokenIsReadWithoutItsWhitespace() throws {
        let path = self.folder + "/refresh_token"
        try "  rt-in-the-file \n".write(toFile: path, atomically: true, encoding: .utf8)
        let store = try RefreshTokenStore(token: nil, path: path)
        #expect(store.current == Secret("rt-in-the-file"))
    }
}
