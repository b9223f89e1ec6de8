import Testing

@testable import BearerCLI

/// `bearer-proxy audit FILE`'s summary: rows per session and host, statuses, refusals by rule, and
/// lines that are no audit record counted rather than fatal.
@Suite struct AuditSummaryTests {
    static func line(
        session: String?,
        host: String,
        status: Int,
        decision: String = "allowed",
        rule: String? = nil,
        refreshed: Bool = false,
        replayed: Bool = false,
        time: String = "2025-01-02T03:04:05.678Z"
    ) -> String {
        let sessionText = session.map { "\"\($0)\"" } ?? "null"
        let ruleText = rule.map { ",\"rule\":\"\($0)\"" } ?? ""
        return """
            {"time":"\(time)","session":\(sessionText),"host":"\(host)","status":\(status),\
            "decision":"\(decision)"\(ruleText),"refreshed":\(refreshed),"replayed":\(replayed)}
            """
    }

    @Test func rowsPerSessionAndHostAndRefusalsByRule() {
        let text = [
            Self.line(session: "a", host: "api:443", status: 200, refreshed: true, time: "2025-01-02T03:04:06.000Z"),
            Self.line(session: "a", host: "api:443", status: 200, replayed: true, time: "2025-01-02T03:04:05.000Z"),
            Self.line(session: "a", host: "api:443", status: 403, decision: "refused", rule: "deny = DELETE /**"),
            Self.line(session: nil, host: "example.com:80", status: 502, decision: "other_host"),
            "{\"time\":\"2025-01-02T03:04:0",
        ].joined(separator: "\n")
        #expect(
            AuditSummary(text).text == """
                4 requests, 2025-01-02T03:04:05.000Z to 2025-01-02T03:04:06.000Z
                1 line is not an audit record
                SESSION  HOST            REQUESTS  REFUSED  REFRESHED  REPLAYED  STATUSES
                -        example.com:80  1         0        0          0         502:1
                a        api:443         3         1        1          1         200:2 403:1

                SESSION  REFUSED  RULE
                a        1        deny = DELETE /**

                """
        )
    }

    @Test func anEmptyFileIsNoRequests() throws {
        #expect(AuditSummary("").text == "0 requests\n")
        #expect(try AuditCommand.parse(["audit.jsonl"]) == .init(file: "audit.jsonl"))
        #expect(throws: CommandLineError.missingValue("<file>")) { try AuditCommand.parse([]) }
    }
}
