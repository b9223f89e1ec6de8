import BearerCore
import BearerSession

/// A JSON backend's login: login_body posted to login_url, with the username and password from the
/// config, or typed on the terminal when the config leaves them out (the password without echo).
struct JSONLogin {
    let context: LoginContext
    let requests: JSONBackendRequests

    func run() -> Result<FetchedToken, LoginError> {
        var typed: [String: Secret<String>] = [:]
        for name in ["username", "password"]
        where self.requests.loginBody.placeholders.contains(name)
            && self.context.settings.templateValue(for: name) == nil
        {
            guard TerminalPrompt.isAvailable else {
                return .failure(
                    .noTerminal(
                        "login_body needs \(name), which is not in the config, and there is no terminal to ask on (set \(name) = ${VARIABLE})"
                    )
                )
            }
            let label = name == "password" ? "Password" : "Username"
            let suffix = name == "password" ? self.context.settings.username.map { " for \($0)" } ?? "" : ""
            switch TerminalPrompt.ask("\(label)\(suffix): ", echo: name != "password", until: self.context.deadline) {
            case .line(let value) where !value.isEmpty:
                typed[name] = Secret(value)
            case .line, .endOfInput:
                return .failure(.noTerminal("no \(name) was typed"))
            case .timedOut:
                return .failure(.timedOut(after: self.context.settings.login.timeout, waitingFor: "the \(name)"))
            }
        }
        guard let request = self.requests.login(with: typed) else {
            return .failure(.notConfigured("set login_url (token_format = json) to log in"))
        }
        let redact = { (text: String?) in self.requests.redacting(text, also: Array(typed.values)) }
        return self.context.send(request, endpoint: "login endpoint").flatMap { response in
            switch LoginContext.result(
                of: JSONTokenResponse.interpret(response, fields: self.requests.fields, isLogin: true)
            ) {
            case .success(let token): .success(token)
            case .failure(.refused(let failure)): .failure(.refused(failure.redactingDescription(redact)))
            case .failure(let error): .failure(error)
            }
        }
    }
}
