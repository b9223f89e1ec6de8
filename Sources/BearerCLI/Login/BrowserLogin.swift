import BearerCore
import BearerHTTP
import BearerSession

/// OAuth2 authorization code with PKCE (RFC 7636) and a loopback redirect (RFC 8252): the user
/// logs in in a browser, the browser brings the code back to 127.0.0.1, the code and the PKCE
/// verifier buy the tokens.
struct BrowserLogin {
    var context: LoginContext
    let authorizationURL: HTTPURL
    let tokenURL: HTTPURL
    /// Without client_id: the registration to make once the redirect URI is known.
    var registration: LoginRegistration? = nil

    func run() -> Result<FetchedToken, LoginError> {
        let settings = self.context.settings
        let pkce = PKCE()
        let server: LoopbackRedirectServer
        do throws(LoginError) {
            server = try LoopbackRedirectServer(
                port: settings.login.redirectPort,
                callback: LoopbackCallback(expectedState: pkce.state),
                loop: self.context.client.loop
            )
        } catch {
            return .failure(error)
        }
        var login = self
        if let registration = self.registration {
            switch registration.register(self.context, redirectURIs: [server.redirectURI], browser: true) {
            case .success(let registered): login.context = registered
            case .failure(let error): return .failure(error)
            }
        }
        return login.authorize(pkce: pkce, server: server)
    }

    /// Opens (or shows) the authorization URL, waits for the browser and redeems the code.
    private func authorize(pkce: PKCE, server: LoopbackRedirectServer) -> Result<FetchedToken, LoginError> {
        let settings = self.context.settings
        let url = self.authorizationRequest(pkce: pkce, redirectURI: server.redirectURI)
        let console = self.context.console
        console.say("To log in, open this URL in a browser:\n\n    \(url)\n")
        if self.context.opensBrowser && BrowserOpener.open(url) {
            console.say("Opened it in your browser. Waiting for the browser to come back to \(server.redirectURI) …")
        } else {
            console.say("Waiting for the browser to come back to \(server.redirectURI) …")
        }
        switch server.waitForCallback(until: self.context.deadline) {
        case nil:
            return .failure(.timedOut(after: settings.login.timeout, waitingFor: "the browser"))
        case .deny(let code, let description):
            return .failure(.denied(code: code, description: description))
        case .refuse:
            preconditionFailure("a refused callback never ends the wait")
        case .accept(let code):
            return self.exchange(code: code, verifier: pkce.verifier, redirectURI: server.redirectURI)
        }
    }

    /// The URL the browser opens (RFC 6749 §4.1.1, RFC 7636 §4.3).
    func authorizationRequest(pkce: PKCE, redirectURI: String) -> String {
        let settings = self.context.settings
        var query: [(String, String)] = [
            ("response_type", "code"),
            ("client_id", settings.clientID ?? ""),
            ("redirect_uri", redirectURI),
            ("code_challenge", pkce.challenge),
            ("code_challenge_method", "S256"),
            ("state", pkce.state),
        ]
        if let scope = settings.scope { query.append(("scope", scope)) }
        if let audience = settings.audience { query.append(("audience", audience)) }
        // RFC 8707 §2.1: the resources the grant is for, asked for again when the code is redeemed.
        query += settings.resources.map { ("resource", $0) }
        return "\(self.authorizationURL)?\(formEncode(query))"
    }

    /// The code and the verifier for tokens at token_url (RFC 6749 §4.1.3, RFC 7636 §4.5).
    private func exchange(code: String, verifier: String, redirectURI: String) -> Result<FetchedToken, LoginError> {
        let builder = TokenRequestBuilder(
            settings: self.context.settings,
            credentials: self.context.credentials,
            url: self.tokenURL
        )
        let request = builder.tokenRequest([
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
            ("code_verifier", verifier),
        ])
        return self.context.send(request, endpoint: "token endpoint").flatMap {
            LoginContext.result(of: TokenEndpointResponse.interpret($0))
        }
    }
}
