import BearerConfig
import BearerCore
import BearerSession
import Dispatch
import Glibc

/// `bearer-proxy logout`: revokes the stored refresh token (RFC 7009 at revocation_url, or a JSON
/// backend's logout_url), then deletes refresh_token_file under the refresh lock, and the client a
/// login registered (what login created, logout deletes: the contract's "logout deletes the items"). The file goes even
/// when the server cannot be reached: logging out on this machine must not depend on the network;
/// the output says whether the token was revoked. The lock file stays, and the output says why
/// (`RefreshTokenStore.lockPath(for:)`): a user would otherwise take it for litter.
enum LogoutCommand: Command {
    static func run(_ options: Options) -> Int32 {
        Self.run(options, console: .standard)
    }

    static func run(_ options: Options, console: Console) -> Int32 {
        let environment: SubcommandEnvironment
        do throws(LoginError) {
            environment = try SubcommandEnvironment(
                options.configurationSource(),
                session: options.session,
                command: "logout"
            )
        } catch {
            console.fail(error)
            return 1
        }
        defer { environment.shutdown() }
        if environment.credentialStore.keyring != nil { return Self.logOutOfKeyring(environment, console: console) }
        let path = environment.refreshTokenFile
        let store: RefreshTokenStore
        do throws(RefreshTokenStore.StoreError) {
            store = try RefreshTokenStore(token: nil, path: path)
        } catch {
            console.fail(.cannotStore(error.description))
            return 1
        }
        guard access(path, F_OK) == 0 else {
            // Nothing to delete, so nothing to lock: no lock file is made for it either.
            console.say("Not logged in: \(path) does not exist. Nothing to revoke.")
            Self.deleteRegisteredClientFile(besides: path, console: console)
            Self.sayWhyTheLockFileStays(path, console: console)
            return 0
        }
        let lease = store.beginRefresh()
        defer { try? store.endRefresh(lease, rotated: nil) }
        guard let token = lease.token else {
            unlink(path)
            console.say("Not logged in: \(path) holds no refresh token. Nothing to revoke.")
            Self.deleteRegisteredClientFile(besides: path, console: console)
            Self.sayWhyTheLockFileStays(path, console: console)
            return 0
        }
        console.say(Self.revoke(token, environment: environment))
        guard unlink(path) == 0 || errno == ENOENT else {
            console.fail(
                .cannotStore("\(path): cannot delete the refresh token file: \(String(cString: strerror(errno)))")
            )
            return 1
        }
        console.say("Deleted \(path).")
        Self.deleteRegisteredClientFile(besides: path, console: console)
        Self.sayWhyTheLockFileStays(path, console: console)
        return 0
    }

    /// The registered client's file beside the token file, when there is one.
    private static func deleteRegisteredClientFile(besides path: String, console: Console) {
        let client = RegisteredClient.path(besides: path)
        if unlink(client) == 0 { console.say("Deleted \(client).") }
    }

    /// Logout under credential_store = secret-service: under the refresh lock, the item read, the token
    /// revoked, the item deleted (also when the server cannot be reached, as the file is).
    private static func logOutOfKeyring(_ environment: SubcommandEnvironment, console: Console) -> Int32 {
        let store: RefreshTokenStore
        do throws(RefreshTokenStore.StoreError) {
            store = try environment.openStore()
        } catch {
            console.fail(.cannotStore(error.description))
            return 1
        }
        let lease = store.beginRefresh()
        defer { try? store.endRefresh(lease, rotated: nil) }
        if let token = lease.token {
            console.say(Self.revoke(token, environment: environment))
        } else {
            console.say("Not logged in: there is no refresh token in \(environment.storePlace). Nothing to revoke.")
        }
        do throws(RefreshTokenStore.StoreError) {
            if try store.deleteKeyringItem() {
                console.say("Deleted the refresh token from \(environment.storePlace).")
            }
            if let client = environment.keyringClient, try client.delete() {
                console.say("Deleted the registered client from \(client.description).")
            }
        } catch {
            console.fail(.cannotStore(error.description))
            return 1
        }
        return 0
    }

    /// When there is a lock file: that it stays on purpose, and why (`RefreshTokenStore.lockPath(for:)`).
    private static func sayWhyTheLockFileStays(_ path: String, console: Console) {
        let lockPath = RefreshTokenStore.lockPath(for: path)
        guard access(lockPath, F_OK) == 0 else { return }
        console.say(
            "Kept \(lockPath): it is empty, and it is the lock that processes sharing \(path) take;"
                + " removing it while one of them may hold it could let two of them spend one refresh token."
        )
    }

    /// One line saying whether the token was revoked, and if not, why and what that means.
    private static func revoke(_ token: Secret<String>, environment: SubcommandEnvironment) -> String {
        guard
            let revocation = TokenRevocation(
                settings: environment.settings,
                credentials: environment.credentials,
                client: environment.client
            )
        else {
            let key: ConfigurationKey = environment.settings.tokenFormat == .json ? .logoutURL : .revocationURL
            return "No \(key) is configured: the refresh token was not revoked and stays valid until it expires."
        }
        let outcome = Locked<Result<Void, TokenRevocation.Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        revocation.revoke(token) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch outcome.withLock({ $0 })! {
        case .success:
            return "Revoked the refresh token at \(revocation.url)."
        case .failure(let failure) where failure.wasAnswered:
            return "The refresh token was not revoked: \(failure.description); it may stay valid until it expires."
        case .failure(let failure):
            return
                "Could not reach the server to revoke the refresh token (\(failure.description)); it may stay valid until it expires."
        }
    }
}
