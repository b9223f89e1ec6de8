import BearerConfig
import BearerCore
import BearerHTTP
import BearerSession

/// `login URL`'s last step before anything is stored: the API is asked once with the new token, as
/// the proxy would ask it. A 401 means the session would never work, and the likeliest cause is a
/// server that ignores RFC 8707's `resource` (the token is for another audience, Entra's and many
/// others' default). That is named when the token is a JWT whose `aud` lacks the resource; the
/// token response itself cannot tell, since RFC 8707 gives it no field saying which resource a
/// token is for. Any other answer, or none, lets the login finish: only a refusal is certain.
struct APITokenCheck {
    let api: HTTPURL
    let settings: SessionSettings
    let client: EndpointCaller

    func verify(_ token: FetchedToken) -> Result<Void, LoginError> {
        let answer = ResourceProbe(caller: self.client).answer(of: self.api, token: token.accessToken)
        guard case .success(let response) = answer, response.status == 401 else { return .success(()) }
        let server = self.settings.issuer.map { "the authorization server \($0.text)" } ?? "the authorization server"
        let place = "login \(self.api)"
        let nothingStored = "; nothing was stored"
        if let resource = self.settings.resources.first,
            let audiences = JWTAudience.audiences(of: token.accessToken.reveal()),
            !audiences.contains(resource)
        {
            let named = audiences.map { "'\(oneLine($0))'" }.joined(separator: ", ")
            return .failure(
                .notConfigured(
                    "\(place): \(server) ignores the resource parameter (RFC 8707): its token is for \(named), not '\(resource)', and the API refused it (401)\(nothingStored)"
                )
            )
        }
        let asked = self.settings.resources.isEmpty ? "" : " (it may ignore the resource parameter, RFC 8707)"
        return .failure(
            .notConfigured(
                "\(place): the API refused the token \(server) just issued for it (401)\(asked)\(nothingStored)"
            )
        )
    }
}
