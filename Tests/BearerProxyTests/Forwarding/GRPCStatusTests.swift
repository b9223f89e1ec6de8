import Testing

@testable import BearerProxy

/// What the proxy reads and writes of gRPC's own fields (docs/grpc.md).
@Suite struct GRPCStatusTests {
    /// `grpc-timeout` is read in each unit, refused when it is not one (and then passed on as is), and
    /// written in the finest unit that fits 8 digits, rounded up, never below 1n.
    @Test func grpcTimeoutIsReadAndWrittenInItsUnits() {
        #expect(GRPC.timeout(Array("30S".utf8)) == .seconds(30))
        #expect(GRPC.timeout(Array("2H".utf8)) == .seconds(7200))
        #expect(GRPC.timeout(Array("1500m".utf8)) == .milliseconds(1500))
        #expect(GRPC.timeout(Array("7n".utf8)) == .nanoseconds(7))
        for bad in ["S", "30", "30s", "123456789S", "-1S", "3 S"] { #expect(GRPC.timeout(Array(bad.utf8)) == nil) }
        #expect(GRPC.timeoutValue(.milliseconds(27_500)) == "27500000u")
        #expect(GRPC.timeoutValue(.seconds(2)) == "2000000u")
        #expect(GRPC.timeoutValue(.nanoseconds(99_999_999)) == "99999999n")
        #expect(GRPC.timeoutValue(.seconds(-3)) == "1n")
        #expect(GRPC.timeoutValue(.seconds(100 * 86_400)) == "8640000S")
    }

    /// Local failures map as the gRPC HTTP/2 protocol document maps HTTP statuses.
    @Test func httpStatusesMapToGRPCStatuses() {
        #expect(
            [400, 401, 403, 404, 429, 502, 503, 504, 408].map(GRPC.status(forHTTPStatus:)) == [
                13, 16, 7, 12, 14, 14, 14, 14, 2,
            ]
        )
    }

    @Test func grpcContentTypesAndMessages() {
        #expect(GRPC.isGRPCContentType(Array("application/grpc".utf8)))
        #expect(GRPC.isGRPCContentType(Array("Application/GRPC+proto".utf8)))
        #expect(!GRPC.isGRPCContentType(Array("application/grpc-web".utf8)))
        #expect(!GRPC.isGRPCContentType(Array("application/json".utf8)))
        #expect(GRPC.message("100% sure: café") == "100%25 sure: caf%C3%A9")
    }
}
