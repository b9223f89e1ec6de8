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

    /// Found by the token-response fuzz target: a year past Int32 stopped the process (its
    /// conversion for timegm trapped). An IMF-fixdate's year is four digits.
    @Test func retryAfterRefusesAYearOfMoreThanFourDigits() {
        for year in ["99999999999", "-9223372036854775808", "10000", "999"] {
            #expect(TokenEndpointResponse.parseRetryAfter("Sun, 06 Nov \(year) 08:49:37 GMT", now: 0) == nil, "\(year)")
        }
        #expect(TokenEndpointResponse.parseHTTPDate("Fri, 31 Dec 9999 23:59:59 GMT") == 253_402_300_799)
    }

    /// Found by the token-response fuzz target: an `expires_in` past what a Duration holds in
    /// milliseconds stopped the process. A lifetime beyond the JSON backend's bound (10⁹ seconds,
    /// about 31 years) is no expiry, as there.
    @Test(arguments: ["1e23", "1e300", "9223372036854775807", "1000000000"])
    func anExpiresInTooLongForADurationIsNoExpiry(value: String) throws {
        let body = Array(#"{"access_token":"a","token_type":"Bearer","expires_in":\#(value)}"#.utf8)
        let token = try #require(TokenEndpointResponse.parseTokenJSON(body))
        #expect(token.expiresIn == nil)
        let fine = Array(#"{"access_token":"a","expires_in":999999999}"#.utf8)
        #expect(TokenEndpointResponse.parseTokenJSON(fine)?.expiresIn == .seconds(999_999_999))
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
