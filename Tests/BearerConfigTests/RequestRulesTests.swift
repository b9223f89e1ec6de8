import BearerConfig
import Testing

@Suite struct RequestRulesTests {
    /// How a request path is normalised before a rule sees it.
    @Test(arguments: [
        ("plain", "/v1/items", "/v1/items"),
        ("query dropped", "/v1/items?id=7&x=/admin", "/v1/items"),
        ("dot-dot", "/v1/../admin", "/admin"),
        ("encoded dot-dot", "/v1/%2e%2e/admin", "/admin"),
        ("upper-case encoded dot-dot", "/v1/%2E%2E/admin", "/admin"),
        ("mixed dot-dot", "/v1/.%2E/admin", "/admin"),
        ("dot", "/v1/./items", "/v1/items"),
        ("double slash", "//admin", "/admin"),
        ("double slash inside", "/v1//items", "/v1/items"),
        ("dot-dot above the root", "/../../admin", "/admin"),
        ("trailing slash", "/v1/items/", "/v1/items"),
        ("encoded unreserved letter", "/v1/%69tems", "/v1/items"),
        ("encoded slash kept", "/v1/a%2fb", "/v1/a%2Fb"),
        ("encoded space kept", "/v1/a%20b", "/v1/a%20b"),
        ("root", "/", "/"),
    ])
    func normalisesPaths(id: String, path: String, normalised: String) {
        #expect(RequestPath(path).description == normalised, "\(id)")
    }

    static let rules = RequestRules(
        allow: [pattern("GET /v1/*"), pattern("POST /v1/items"), pattern("* /healthz"), pattern("GET /files/**")],
        deny: [pattern("GET /files/secret/**")]
    )

    @Test(arguments: [
        ("one segment", "GET", "/v1/items", true),
        ("two segments under *", "GET", "/v1/items/7", false),
        ("method differs", "DELETE", "/v1/items", false),
        ("method case", "get", "/v1/items", false),
        ("exact", "POST", "/v1/items", true),
        ("exact with query", "POST", "/v1/items?dry=1", true),
        ("any method", "PATCH", "/healthz", true),
        ("dot-dot out of the allowed tree", "GET", "/v1/../admin", false),
        ("encoded dot-dot out", "GET", "/v1/%2e%2e/admin", false),
        ("dot-dot into the allowed tree", "GET", "/admin/../v1/items", true),
        ("double slash", "GET", "/v1//items", true),
        ("dot segment", "GET", "/v1/./items", true),
        ("encoded slash never a wildcard", "GET", "/v1/a%2Fb", false),
        ("encoded slash under **", "GET", "/files/a%2Fb", false),
        ("** takes none", "GET", "/files", true),
        ("** takes many", "GET", "/files/a/b/c", true),
        ("deny wins", "GET", "/files/secret/key", false),
        ("deny through a dot-dot", "GET", "/files/x/../secret/key", false),
        ("deny through double slash", "GET", "/files//secret/key", false),
        ("asterisk-form", "OPTIONS", "*", false),
    ])
    func decides(id: String, method: String, path: String, allowed: Bool) {
        #expect((Self.rules.refusal(method: method, path: RequestPath(path)) == nil) == allowed, "\(id)")
    }

    @Test func namesTheRuleThatRefused() {
        let rules = RequestRules(
            allow: [pattern("GET /v1/*"), pattern("POST /v1/items")],
            deny: [pattern("GET /v1/admin")]
        )
        #expect(
            rules.refusal(method: "DELETE", path: RequestPath("/v1/items/7")) == "allow = GET /v1/*, POST /v1/items"
        )
        #expect(rules.refusal(method: "GET", path: RequestPath("/v1/admin")) == "deny = GET /v1/admin")
    }

    @Test(arguments: [
        ("lower-case method", "get /v1", "unknown method 'get' (did you mean 'GET'? methods are case-sensitive)"),
        ("slip", "DELTE /v1", "unknown method 'DELTE' (did you mean 'DELETE'? methods are case-sensitive)"),
        ("no path", "GET", "invalid pattern 'GET' (expected METHOD PATH, e.g. GET /v1/*)"),
        (
            "relative path", "GET v1/*",
            "invalid path in 'GET v1/*' (expected a path starting with /, without a query; * is one segment, ** any number)"
        ),
        ("odd method", "A(B /v1", "invalid method 'A(B' (expected a method such as GET, or * for any)"),
    ])
    func rejectsBadPatterns(id: String, text: String, message: String) {
        guard case .failure(let error) = RequestPattern.parse(text) else {
            Issue.record("\(id): parsed")
            return
        }
        #expect(error.description == message, "\(id)")
    }

    @Test func acceptsAnExtensionMethod() {
        #expect(throws: Never.self) { try RequestPattern.parse("PROPFIND /dav/**").get() }
    }
}

private func pattern(_ text: String) -> RequestPattern {
    try! RequestPattern.parse(text).get()
}
