import BearerConfig

extension RedisEndpoint {
    /// What Redis must be told before the first command: AUTH (when there is a password), SELECT
    /// (when the database is not 0).
    var handshake: [RESPCommand] {
        var commands: [RESPCommand] = []
        if let password = self.password {
            if let username = self.username {
                commands.append(RESPCommand("AUTH", username, password.reveal()))
            } else {
                commands.append(RESPCommand("AUTH", password.reveal()))
            }
        }
        if self.database != 0 { commands.append(RESPCommand("SELECT", String(self.database))) }
        return commands
    }
}
