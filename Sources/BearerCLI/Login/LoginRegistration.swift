import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO
import BearerSession

/// A login without client_id at a server with a registration endpoint: registers bearer-proxy as a
/// public client (RFC 7591) once the redirect URI is known, keeps it beside refresh_token_file (or,
/// under the Secret Service store, in its keyring item), and
/// gives the login a context with that client_id. A client kept by an earlier login was already
/// filled in by discovery, so this runs only when there is none.
struct LoginRegistration {
    let endpoint: HTTPURL
    let refreshTokenFile: String
    /// The keyring item to keep it in instead of the file (credential_store = secret-service).
    let keyring: KeyringRegisteredClient?

    /// The grants the client asks for: the code with PKCE (browser) unless only the device grant is
    /// used, the refresh token, and the device grant when the server offers it.
    static func grantTypes(for settings: SessionSettings, browser: Bool) -> [String] {
        (browser ? ["authorization_code"] : []) + ["refresh_token"]
            + (settings.login.deviceAuthorizationURL == nil ? [] : [ClientRegistration.deviceGrant])
    }

    /// `context` with the registered client's id, or why the server would not register one.
    func register(_ context: LoginContext, redirectURIs: [String], browser: Bool) -> Result<LoginContext, LoginError> {
        let request = ClientRegistration.request(
            to: self.endpoint,
            redirectURIs: redirectURIs,
            grantTypes: Self.grantTypes(for: context.settings, browser: browser),
            scope: context.settings.scope
        )
        let registered = context.send(request, endpoint: "registration endpoint").flatMap { response in
            ClientRegistration.interpret(response, from: self.endpoint).mapError {
                LoginError.notConfigured("\($0.description); register a client and set client_id")
            }
        }
        return registered.flatMap { client in
            let place: String
            switch self.keep(client) {
            case .success(let kept): place = kept
            case .failure(let error): return .failure(error)
            }
            context.console.say(
                "Registered bearer-proxy as client \(client.clientID) at \(self.endpoint) (kept in \(place))."
            )
            var settings = context.settings
            settings.clientID = client.clientID
            settings.clientSecret = nil
            return .success(context.with(settings: settings))
        }
    }

    /// Stores `client` in the keyring item, else beside the refresh token file; where it went.
    private func keep(_ client: RegisteredClient) -> Result<String, LoginError> {
        if let keyring = self.keyring {
            do throws(RefreshTokenStore.StoreError) {
                try keyring.store(client)
            } catch {
                return .failure(.cannotStore(error.description))
            }
            return .success(keyring.description)
        }
        do throws(AtomicFile.WriteError) {
            try AtomicFile.createFolders(AtomicFile.folder(of: self.refreshTokenFile))
            try client.store(besides: self.refreshTokenFile)
        } catch {
            return .failure(.cannotStore("\(error.path): \(error.reason)"))
        }
        return .success(RegisteredClient.path(besides: self.refreshTokenFile))
    }
}
