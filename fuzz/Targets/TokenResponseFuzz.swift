import BearerConfig
import BearerSession

/// What a token endpoint or a JSON backend answers: status, `Retry-After`, body. The first byte
/// picks the status; the next line is the Retry-After value, the one after it a `token_field` path,
/// the rest the body. Both interpreters read it: OAuth2's and the JSON backend's (with the fuzzed
/// path and with the default names).
enum TokenResponseFuzz {
    static let statuses = [200, 200, 201, 400, 401, 403, 429, 500, 503]

    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let lines = input.dropFirst().split(
            separator: UInt8(ascii: "\n"),
            maxSplits: 2,
            omittingEmptySubsequences: false
        )
        let retryAfter = lines.count > 1 ? text(Array(lines[0])) : nil
        let path = lines.count > 2 ? JSONFieldPath(text(Array(lines[1]))) : nil
        let body = Array(lines.last ?? [])
        let response = EndpointResponse(
            status: Self.statuses[Int(first) % Self.statuses.count],
            headers: retryAfter.map { [("Retry-After", $0)] } ?? [],
            body: body
        )
        let now = 1_800_000_000.0
        _ = TokenEndpointResponse.interpret(response, now: now)
        for fields in [JSONTokenFields(), JSONTokenFields(token: path, refreshToken: path, expires: path)] {
            _ = JSONTokenResponse.interpret(response, fields: fields, isLogin: first & 0x80 != 0, now: now)
        }
    }
}
