import BearerCore
import Foundation
import Testing

@testable import BearerConfig
@testable import BearerSession

@Suite struct JSONTokenResponseTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let id: String
        let body: String
        var fields = JSONTokenFields()
        let token: String
        var refreshToken: String?
        /// Expected lifetime in seconds (checked to the second), nil for none.
        var lifetime: Int?
        var testDescription: String { self.id }
    }

    static let now = 1_800_000_000.0

    static let cases: [Case] = [
        Case(
            id: "snake_case",
            body: #"{"access_token":"a1","refresh_token":"r1","expires_in":3600}"#,
            token: "a1",
            refreshToken: "r1",
            lifetime: 3600
        ),
        Case(
            id: "camelCase",
            body: #"{"accessToken":"a2","refreshToken":"r2","expiresIn":"900"}"#,
            token: "a2",
            refreshToken: "r2",
            lifetime: 900
        ),
        Case(id: "token", body: #"{"token":"a3"}"#, token: "a3"),
        Case(
            id: "data envelope",
            body: #"{"success":true,"data":{"accessToken":"a4","refreshToken":"r4","expiresIn":60}}"#,
            token: "a4",
            refreshToken: "r4",
            lifetime: 60
        ),
        Case(
            id: "top level before data",
            body: #"{"access_token":"top","data":{"access_token":"inner","refresh_token":"r5"}}"#,
            token: "top",
            refreshToken: "r5"
        ),
        Case(
            id: "expiresAt epoch seconds",
            body: #"{"accessToken":"a6","expiresAt":1800000120}"#,
            token: "a6",
            lifetime: 120
        ),
        Case(
            id: "expires_at epoch milliseconds",
            body: #"{"access_token":"a7","expires_at":1800000300000}"#,
            token: "a7",
            lifetime: 300
        ),
        Case(
            id: "expiresAt RFC 3339",
            body: #"{"data":{"accessToken":"a8","expiresAt":"2027-01-15T08:10:00Z"}}"#,
            token: "a8",
            lifetime: 600
        ),
        Case(
            id: "expiresAt RFC 3339 with fraction and offset",
            body: #"{"accessToken":"a9","expiresAt":"2027-01-15T09:05:00.250+01:00"}"#,
            token: "a9",
            lifetime: 300
        ),
        Case(id: "expiry in the past is no expiry", body: #"{"accessToken":"b1","expiresAt":1700000000}"#, token: "b1"),
        Case(
            id: "field paths",
            body: #"{"result":{"auth":{"jwt":"c1","renew":"c2","validUntil":1800000045}},"accessToken":"decoy"}"#,
            fields: JSONTokenFields(
                token: JSONFieldPath("result.auth.jwt"),
                refreshToken: JSONFieldPath("result.auth.renew"),
                expires: JSONFieldPath("result.auth.validUntil")
            ),
            token: "c1",
            refreshToken: "c2",
            lifetime: 45
        ),
        Case(
            id: "field path through an array, expires_field as a lifetime",
            body: #"{"tokens":[{"value":"d1","ttl":30}]}"#,
            fields: JSONTokenFields(token: JSONFieldPath("tokens.0.value"), expires: JSONFieldPath("tokens.0.ttl")),
            token: "d1",
            lifetime: 30
        ),
    ]

    @Test(arguments: cases)
    func readsTokensAndExpiry(_ example: Case) throws {
        let token = try #require(
            JSONTokenResponse.parseToken(Array(example.body.utf8), fields: example.fields, now: Self.now)
        )
        #expect(token.accessToken.reveal() == example.token)
        #expect(token.refreshToken?.reveal() == example.refreshToken)
        #expect(token.expiresIn.map { Int($0.seconds.rounded()) } == example.lifetime)
    }

    @Test(arguments: [
        #"{"refreshToken":"r"}"#, #"{"access_token":""}"#, #"{"access_token":"two words"}"#, "not json",
        #"{"data":{"data":{"accessToken":"too deep"}}}"#,
    ])
    func findsNoTokenWhereThereIsNone(body: String) {
        #expect(JSONTokenResponse.parseToken(Array(body.utf8), fields: JSONTokenFields(), now: Self.now) == nil)
    }

    static func response(_ status: Int, _ body: String, headers: [(String, String)] = []) -> EndpointResponse {
        EndpointResponse(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8))
    }

    @Test func namesTheBackendsMessageWhenItRefuses() {
        let outcomes = [
            (401, #"{"statusCode":401,"message":"invalid refresh token"}"#, false),
            (403, #"{"error":{"code":"AUTH_EXPIRED","message":"session expired"}}"#, false),
            (400, #"{"error":"invalid_grant","error_description":"bad grant"}"#, true),
        ].map { JSONTokenResponse.interpret(Self.response($0.0, $0.1), fields: JSONTokenFields(), isLogin: $0.2) }
        let failures = outcomes.compactMap { outcome -> SessionFailure? in
            if case .permanent(let failure) = outcome { return failure }
            return nil
        }
        #expect(
            failures == [
                .rejected(code: "http_401", description: "invalid refresh token"),
                .rejected(code: "AUTH_EXPIRED", description: "session expired"),
                .loginRejected(code: "invalid_grant", description: "bad grant"),
            ]
        )
        #expect(failures[2].message.hasPrefix("bearer-proxy: login failed: the login endpoint answered invalid_grant"))
    }

    @Test func rateLimitsAndServerErrorsAreWorthARetry() {
        let limited = JSONTokenResponse.interpret(
            Self.response(429, "{}", headers: [("Retry-After", "7")]),
            fields: JSONTokenFields(),
            isLogin: false
        )
        guard case .rateLimited(let wait) = limited else {
            Issue.record("expected rate limited, got \(limited)")
            return
        }
        #expect(wait == .seconds(7))
        let broken = JSONTokenResponse.interpret(Self.response(502, ""), fields: JSONTokenFields(), isLogin: false)
        guard case .transient(let reason, false) = broken else {
            Issue.record("expected transient, got \(broken)")
            return
        }
        #expect(reason == "the token endpoint answered 502")
        let empty = JSONTokenResponse.interpret(
            Self.response(200, #"{"ok":true}"#),
            fields: JSONTokenFields(token: JSONFieldPath("data.jwt")),
            isLogin: false
        )
        guard case .transient(let reason, _) = empty else {
            Issue.record("expected transient, got \(empty)")
            return
        }
        #expect(reason == "the token endpoint answered 200 without an access token (nothing at data.jwt)")
        let login = JSONTokenResponse.interpret(Self.response(503, ""), fields: JSONTokenFields(), isLogin: true)
        guard case .transient(let loginReason, _) = login else {
            Issue.record("expected transient, got \(login)")
            return
        }
        #expect(loginReason == "the login endpoint answered 503", "a login's answer is not the token endpoint's")
    }
}

@Suite struct JSONBackendRequestTests {
    func requests(_ text: String) throws -> JSONBackendRequests {
        JSONBackendRequests(
            settings: try Configuration.build(
                from: try ConfigFileParser.parse(text, fileName: "p.conf", environment: [:])
            ).defaultSession
        )
    }

    @Test func refreshLoginAndLogoutBodiesCarryTheirValues() throws {
        let requests = try self.requests(
            """
            token_format = json
            token_url = http://api.test/api/auth/refresh
            login_url = http://api.test/api/auth/login
            logout_url = http://api.test/api/auth/logout
            token_body = {"refreshToken": "{{refresh_token}}", "device": "{{client_id}}"}
            client_id = cli
            username = alice
            password = pw-1234
            """
        )
        let refresh = try #require(requests.refresh(Secret("rt-9")))
        #expect(refresh.url.description == "http://api.test/api/auth/refresh")
        #expect(refresh.contentType == "application/json")
        #expect(String(decoding: refresh.body, as: UTF8.self) == #"{"refreshToken": "rt-9", "device": "cli"}"#)
        let login = try #require(requests.login())
        #expect(String(decoding: login.body, as: UTF8.self) == #"{"username": "alice", "password": "pw-1234"}"#)
        let typed = try #require(requests.login(with: ["password": Secret("typed-pw")]))
        #expect(String(decoding: typed.body, as: UTF8.self) == #"{"username": "alice", "password": "typed-pw"}"#)
        let logout = try #require(requests.logout(Secret("rt-9")))
        #expect(logout.url.description == "http://api.test/api/auth/logout")
        #expect(String(decoding: logout.body, as: UTF8.self) == #"{"refreshToken": "rt-9", "device": "cli"}"#)
        #expect(requests.canLogIn())
    }

    /// A backend that echoes the request in its error must not put the password into a 401 or a log.
    @Test func aBackendEchoingASecretIsRedacted() throws {
        let requests = try self.requests(
            "token_format = json\nlogin_url = http://api.test/login\nusername = alice\npassword = pw-echoed-9"
        )
        let failure = SessionFailure.loginRejected(
            code: "http_401",
            description: "bad password pw-echoed-9 for rt-x-77"
        )
        .redactingDescription { requests.redacting($0, also: [Secret("rt-x-77")]) }
        #expect(failure == .loginRejected(code: "http_401", description: "bad password <redacted> for <redacted>"))
    }
}
