import BearerCore
import Foundation
import Testing

@testable import BearerSession

/// The dates a token endpoint sends, read without Foundation's ICU formatters (the binary links
/// FoundationEssentials only): the same instants `DateFormatter` and `ISO8601DateFormatter` read.
@Suite struct TokenDateParsingTests {
    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT", "Thu, 01 Jan 2026 00:00:00 GMT", "Fri, 29 Feb 2028 23:59:59 GMT",
    ])
    func retryAfterReadsAnIMFFixdateAsDateFormatterDid(text: String) throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let expected = try #require(formatter.date(from: text)).timeIntervalSince1970
        #expect(TokenEndpointResponse.parseHTTPDate(text) == expected)
        #expect(TokenEndpointResponse.parseRetryAfter(" \(text) ", now: expected - 30) == .seconds(30))
    }

    @Test func retryAfterRefusesWhatIsNoDate() {
        for text in ["", "soon", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT", "06 Nov 1994"] {
            #expect(TokenEndpointResponse.parseRetryAfter(text, now: 0) == nil, "\(text)")
        }
        #expect(TokenEndpointResponse.parseRetryAfter("120", now: 0) == .seconds(120))
    }

    @Test(arguments: [
        "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.250Z", "2026-06-30T12:34:56+02:00", "2026-06-30T12:34:56.5-05:30",
    ])
    func rfc3339ReadsWhatISO8601DateFormatterRead(text: String) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let fractional = formatter.date(from: text)
        formatter.formatOptions = [.withInternetDateTime]
        let expected = try #require(fractional ?? formatter.date(from: text))
        let parsed = try #require(JSONTokenResponse.rfc3339(text))
        #expect(abs(parsed.timeIntervalSince1970 - expected.timeIntervalSince1970) < 0.001)
    }
}
