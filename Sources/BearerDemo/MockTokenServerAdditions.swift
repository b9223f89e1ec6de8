/// What a test adds to the mock token endpoint: BearerTestSupport's login endpoints (authorization
/// code with PKCE, device authorization) and its checks of signed credentials, which verify
/// signatures with OpenSSL. The demo's endpoint has none, so this module needs no verifier.
package protocol MockTokenServerAdditions: Sendable {
    /// The answer to a request for a path the endpoint does not serve itself; nil: none, the request
    /// is a token call.
    func answer(_ request: MockRequest, server: MockTokenServer) -> MockResponse?

    /// A token call's refusal for its client authentication or its grant; nil: go on.
    func refusal(
        of request: MockRequest,
        form: [String: String],
        settings: MockTokenServer.Settings,
        server: MockTokenServer
    ) -> MockResponse?

    /// The answer to a token call with a grant type the endpoint does not know itself; nil:
    /// `unsupported_grant_type`. `thumbprint`: the key of the call's DPoP proof, if any.
    func answer(
        grant: String,
        form: [String: String],
        settings: MockTokenServer.Settings,
        thumbprint: String?,
        server: MockTokenServer
    ) -> MockResponse?
}

/// Settings of types this module does not know, one value per type: what `MockTokenServerAdditions`
/// read from `MockTokenServer.Settings`.
package struct MockAdditionSettings: Sendable {
    private var values: [ObjectIdentifier: any Sendable] = [:]

    package init() {}

    package subscript<Value: Sendable>(_ type: Value.Type) -> Value? {
        get { self.values[ObjectIdentifier(type)] as? Value }
        set { self.values[ObjectIdentifier(type)] = newValue }
    }
}
