import Testing

@testable import BearerConfig
@testable import BearerSession

/// What the Redis client says first on a connection to a session_store URL.
@Suite struct RedisEndpointHandshakeTests {
    @Test func logsInWithAUTHAndSELECTAsTheURLSays() throws {
        let endpoint = try RedisEndpoint.parse("rediss://fleet:pw@h:1/3").get()
        #expect(endpoint.handshake == [RESPCommand("AUTH", "fleet", "pw"), RESPCommand("SELECT", "3")])
        #expect(try RedisEndpoint.parse("redis://:pw@h").get().handshake == [RESPCommand("AUTH", "pw")])
        #expect(try RedisEndpoint.parse("redis://h").get().handshake == [])
    }
}
