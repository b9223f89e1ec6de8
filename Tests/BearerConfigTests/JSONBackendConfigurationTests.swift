import BearerCore
import Foundation
import Testing

@testable import BearerConfig

@Suite struct JSONTemplateTests {
    @Test func fillsPlaceholdersWithJSONEscapedValues() throws {
        let template = try JSONTemplate.parse(#"{"user": "{{ username }}", "pass": "{{password}}", "n": 1}"#).get()
        #expect(template.placeholders == ["username", "password"])
        let body = template.render { ["username": #"a"b\c"#, "password": "line\nbreak\u{01}"][$0] }
        #expect(String(decoding: body, as: UTF8.self) == #"{"user": "a\"b\\c", "pass": "line\nbreak\u0001", "n": 1}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        #expect(parsed?["user"] as? String == #"a"b\c"#, "a quote in a value must not end its string")
        #expect(parsed?["pass"] as? String == "line\nbreak\u{01}")
    }

    @Test func theDefaultsNameTheUsualFields() {
        let refresh = JSONTemplate.defaultTokenBody.render { $0 == "refresh_token" ? "rt-1" : nil }
        #expect(String(decoding: refresh, as: UTF8.self) == #"{"refresh_token": "rt-1"}"#)
        let login = JSONTemplate.defaultLoginBody.render { ["username": "u", "password": "p"][$0] }
        #expect(String(decoding: login, as: UTF8.self) == #"{"username": "u", "password": "p"}"#)
    }

    @Test(arguments: [
        (
            #"{"a": "{{token}}"}"#,
            "unknown placeholder {{token}} (expected one of {{refresh_token}}, {{username}}, {{password}}, {{client_id}}, {{client_secret}}, {{scope}})"
        ),
        (
            #"{"a": {{refresh_token}}}"#,
            #"is not a JSON object once its placeholders are filled in (put them inside quotes: "{{refresh_token}}")"#
        ),
        (
            #"["{{refresh_token}}"]"#,
            #"is not a JSON object once its placeholders are filled in (put them inside quotes: "{{refresh_token}}")"#
        ),
    ])
    func refusesBadTemplates(text: String, message: String) {
        #expect(throws: JSONTemplateError(message)) { try JSONTemplate.parse(text).get() }
    }

    @Test func checkShowsKeysAndPlaceholdersButNotLiteralValues() throws {
        let template = try JSONTemplate.parse(#"{"apiKey": "sk-live-123", "user": "{{username}}", "n": 2}"#).get()
        #expect(template.maskedDescription == #"{"apiKey": "<redacted>", "user": "{{username}}", "n": 2}"#)
    }
}

@Suite struct JSONBackendConfigurationTests {
    func load(_ text: String, environment: [String: String] = [:]) throws -> Configuration {
        let config = try Configuration.build(
            from: try ConfigFileParser.parse(text, fileName: "p.conf", environment: environment)
        )
        try config.validateCombinations(place: "p.conf")
        return config
    }

    @Test func readsEveryJSONAndLoginSetting() throws {
        let config = try self.load(
            """
            upstream = https://api.example.com
            token_format = json
            token_url = https://api.example.com/api/auth/refresh
            token_body = {"refreshToken": "{{refresh_token}}", "client": "{{client_id}}"}
            login_url = https://api.example.com/api/auth/login
            login_body = {"email": "{{username}}", "password": "{{password}}"}
            logout_url = https://api.example.com/api/auth/logout
            token_field = data.accessToken
            refresh_token_field = data.refreshToken
            expires_field = data.expiresAt
            client_id = app
            username = alice@example.com
            password = ${PASSWORD}
            refresh_token_file = /tmp/rt
            redirect_port = 8765
            login_timeout = 2m
            """,
            environment: ["PASSWORD": "pw-in-env-secret"]
        )
        #expect(config.tokenFormat == .json)
        #expect(config.jsonBackend.loginURL?.description == "https://api.example.com/api/auth/login")
        #expect(config.jsonBackend.logoutURL?.description == "https://api.example.com/api/auth/logout")
        #expect(config.jsonBackend.effectiveTokenBody.placeholders == ["refresh_token", "client_id"])
        #expect(config.jsonBackend.fields.token?.description == "data.accessToken")
        #expect(config.jsonBackend.fields.expires?.components == ["data", "expiresAt"])
        #expect(config.login.redirectPort == 8765)
        #expect(config.login.timeout == .seconds(120))
        #expect(config.canLogInUnattended)
        let report = ConfigurationLoader.report(config)
        #expect(report.contains(#"login_body = {"email": "{{username}}", "password": "{{password}}"}"# + "\n"))
        #expect(report.contains("password = <redacted>\n"))
        #expect(!report.contains("pw-in-env-secret"))
    }

    @Test func theDefaultsAreShownForJSON() throws {
        let report = ConfigurationLoader.report(
            try self.load("token_format = json\ntoken_url = http://h/refresh\nrefresh_token = rt-x")
        )
        #expect(report.contains(#"token_body = {"refresh_token": "{{refresh_token}}"}"# + "\n"))
        #expect(report.contains("token_field = (searched by name)\n"))
        #expect(report.contains("login_timeout = 5m\n"))
        #expect(report.contains("redirect_port = 0\n"))
    }

    @Test(arguments: [
        ("token_format = xml", "p.conf:1: token_format: expected form or json, got 'xml'"),
        (
            "token_body = nope",
            #"p.conf:1: token_body: is not a JSON object once its placeholders are filled in (put them inside quotes: "{{refresh_token}}")"#
        ),
        (
            "token_field = data..token",
            "p.conf:1: token_field: invalid field path 'data..token' (expected names joined by dots, e.g. data.accessToken)"
        ),
        (
            "login_url = ftp://x",
            "p.conf:1: login_url: 'ftp://x' must start with http:// or https:// (expected e.g. https://api.example.com/api/auth/login)"
        ),
        (
            "redirect_port = 70000",
            "p.conf:1: redirect_port: expected a port from 0 to 65535 (0: any free port), got '70000'"
        ),
        (
            "login_timeout = forever",
            "p.conf:1: login_timeout: invalid duration 'forever' (expected e.g. 500ms, 30s, 5m)"
        ),
        ("login_url = http://h/login", "p.conf:1: login_url: applies to token_format = json"),
        (
            "token_format = json",
            "p.conf:1: token_format: json needs token_url (the refresh endpoint), login_url, or both"
        ),
        (
            "token_format = json\ntoken_url = http://h/r",
            "p.conf:2: token_url: a JSON refresh needs refresh_token or refresh_token_file (or login_url)"
        ),
        (
            "token_format = json\nlogin_url = http://h/l\nusername = u",
            "p.conf:2: login_url: login_body needs username and password: set them, or set refresh_token_file and fill it with 'bearer-proxy login'"
        ),
        (
            "token_format = json\nlogin_url = http://h/l\nrefresh_token_file = /tmp/x\nlogin_body = {\"k\": \"{{client_secret}}\"}",
            "p.conf:4: login_body: uses {{client_secret}} but client_secret is not set"
        ),
        (
            "token_format = json\ntoken_url = http://h/r\nrefresh_token = r\ntoken_body = {\"s\": \"{{scope}}\"}",
            "p.conf:4: token_body: uses {{scope}} but scope is not set"
        ),
        (
            "token_format = json\ntoken_url = http://h/r\nrefresh_token = r\ntoken_command = x",
            "p.conf:4: token_command: set either token_url or token_command, not both"
        ),
        (
            "token_format = json\nlogin_url = http://h/l\nusername = u\npassword = p\nrevocation_url = http://h/revoke",
            "p.conf:5: revocation_url: applies to token_format = form (a JSON backend logs out at logout_url)"
        ),
        (
            "token_format = json\nlogin_url = http://h/l\nusername = u\npassword = p\nauthorization_url = http://h/a",
            "p.conf:5: authorization_url: applies to token_format = form (a JSON backend logs in at login_url)"
        ),
        (
            "authorization_url = http://h/a",
            "p.conf:1: authorization_url: needs token_url (where the code is exchanged for tokens) and client_id"
        ),
        (
            "device_authorization_url = http://h/d\ntoken_url = http://h/t",
            "p.conf:1: device_authorization_url: needs token_url (where the code is exchanged for tokens) and client_id"
        ),
    ])
    func refusesInconsistentSettings(text: String, message: String) {
        do {
            _ = try self.load(text)
            Issue.record("expected an error")
        } catch {
            #expect("\(error)" == message)
        }
    }
}
