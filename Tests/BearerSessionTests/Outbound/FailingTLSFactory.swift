import BearerIO

@testable import BearerSession

/// A TLS factory that cannot make a connection (as when OpenSSL runs out of memory). BearerProxyTests
/// keeps the same three lines: test targets cannot share what needs BearerSession.
struct FailingTLSFactory: TLSConnectionFactory {
    func makeConnection(serverName: String?, sessionKey: String?) -> TLSConnection? { nil }
}
