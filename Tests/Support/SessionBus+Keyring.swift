import BearerCore
import BearerIO
import BearerKeyring
import Glibc

/// A real Secret Service on the private bus: gnome-keyring-daemon, and libsecret's `secret-tool` as
/// the reader and writer that is not our code.
///
/// The recipe for an unlocked login keyring without a desktop: `gnome-keyring-daemon --foreground
/// --unlock --components=secrets` with the password on its standard input, HOME and the XDG folders
/// in the bus's folder. With no keyring yet it creates the `login` collection with that password,
/// unlocked, and makes it the `default` alias, which is what `secret-tool store` and `CreateItem` on
/// the alias write to. `lockKeyring()` then locks it as a user's "lock" does: unlocking it again
/// needs a prompt.
extension SessionBus {
    /// Starts gnome-keyring-daemon's Secret Service with an unlocked login keyring (the recipe above)
    /// and waits (bounded) until its default collection answers.
    package func startKeyring(password: String = "bearer-test-keyring") throws {
        for folder in ["home", "home/data", "home/config", "run"] { mkdir("\(self.directory)/\(folder)", 0o700) }
        let input = makeClosingPipe()
        try? SystemCall.writeAll(input.write, Array(password.utf8))
        close(input.write)
        defer { close(input.read) }
        try self.startOnBus(
            [ExternalTool.gnomeKeyring.program, "--foreground", "--unlock", "--components=secrets"],
            log: "gnome-keyring.log",
            stdin: input.read
        )
        let address = self.address
        let ready = waitUntil(timeout: .seconds(20)) {
            (try? SecretServiceClient(address: address, timeout: .seconds(2)).defaultCollection()) != nil
        }
        guard ready else { throw StartError(description: "gnome-keyring-daemon's Secret Service did not answer") }
    }

    /// Locks the login keyring, as a user's "lock" does: unlocking it again needs a prompt.
    package func lockKeyring() throws {
        let client = try SecretServiceClient(address: self.address, timeout: .seconds(5))
        try client.lock([try client.defaultCollection()])
    }

    /// `secret-tool ARGUMENTS` on this bus, with `input` on its standard input (`store` reads the secret there).
    package func secretTool(_ arguments: [String], input: String? = nil) throws -> ProgramOutcome {
        try runProgram(
            [ExternalTool.secretTool.program] + arguments,
            environment: self.environment,
            input: input,
            timeout: .seconds(20)
        )
    }

}
