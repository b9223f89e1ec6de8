import BearerHTTP
import BearerIO
import Testing

@testable import BearerConfig
@testable import BearerSession

/// Which outbound connections present tls_client_cert: the upstream's, the token endpoint's and the
/// inject hosts', no other.
@Suite struct ClientCertificateSelectorTests {
    @Test func theClientCertificateGoesOnlyToTheConfiguredHosts() throws {
        var configuration = Configuration()
        configuration.upstream = try HTTPURL.parse("https://api.internal:8443").get()
        configuration.injectHosts = [.subdomains(of: "corp.internal")]
        configuration.tokenURL = try HTTPURL.parse("https://auth.internal/token").get()
        let selector = ClientCertificateSelector(
            presenting: try TLSContext.client(caFile: nil, verify: false),
            withoutCertificate: try TLSContext.client(caFile: nil, verify: false),
            hosts: configuration.hostsThatSeeTheClientCertificate
        )
        for host in ["api.internal", "auth.internal", "x.corp.internal"] {
            #expect(selector.presents(to: host), "\(host)")
        }
        for host in ["corp.internal", "api.internal.evil", "example.com"] {
            #expect(!selector.presents(to: host), "\(host)")
        }
    }
}
