import Testing

@testable import BearerCore

@Suite struct BackoffTests {
    @Test(arguments: [
        (1, 100), (2, 200), (3, 400), (4, 800), (5, 1600), (6, 3200), (7, 5000), (8, 5000), (1000, 5000), (0, 100),
    ])
    func theStandardBackoffDoublesFrom100MillisecondsToFiveSeconds(failures: Int, milliseconds: Int64) {
        #expect(Backoff.standard.delay(afterFailures: failures) == .milliseconds(milliseconds))
    }
}
