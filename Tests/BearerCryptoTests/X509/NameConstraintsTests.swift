import BearerCore
import BearerHTTP
import BearerTestSupport
import Testing

@testable import BearerCrypto

@Suite struct NameConstraintsTests {
    @Test func patternsBecomeTheFewestSubtrees() {
        let constraints = NameConstraints(
            permitting: patterns("API.example.com, *.example.com, api.example.com:8443, 127.0.0.1, 127.0.0.1:81, [::1]")
        )
        #expect(constraints.dnsSubtrees == ["example.com"])
        #expect(constraints.ipRanges.map(\.description) == ["127.0.0.1/32", "::1/128"])
        #expect(
            constraints.extensionValue
                == "critical,permitted;DNS:example.com,permitted;IP:127.0.0.1/255.255.255.255,permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
        )
    }

    @Test func aTypeWithoutHostsGetsARangeNoHostHas() {
        #expect(
            NameConstraints(permitting: patterns("10.1.2.3")).description == "DNS:invalid, IP:10.1.2.3/32, IP:::/128"
        )
        #expect(NameConstraints(permitting: patterns("a.test")).description == "DNS:a.test, IP:0.0.0.0/32, IP:::/128")
        #expect(NameConstraints(permitting: []).description == "DNS:invalid, IP:0.0.0.0/32, IP:::/128")
    }

    @Test(arguments: [
        ("api.example.com", true),
        ("API.Example.com", true),
        ("v2.api.example.com", true),
        ("api.example.com:9000", true),
        ("example.com", false),
        ("badapi.example.com", false),
        ("*.api.example.com", true),
        ("*.example.com", false),
        ("eu.corp.test", true),
        ("corp.test", true),
        ("*.eu.corp.test", true),
        ("corp.test.evil", false),
        ("127.0.0.1", true),
        ("127.0.0.1:8443", true),
        ("127.0.0.2", false),
        ("[::1]", false),
        ("0.0.0.0", false),
    ])
    func permitsOnlyWhatItWasMadeFor(host: String, isPermitted: Bool) {
        let constraints = NameConstraints(permitting: patterns("api.example.com, *.corp.test, 127.0.0.1"))
        #expect(constraints.permits(HostPattern.parse(host)!) == isPermitted)
    }

    @Test func aLeadingDotSubtreePermitsSubdomainsOnly() {
        let constraints = NameConstraints(dnsSubtrees: [".corp.test"], ipRanges: [])
        #expect(constraints.permits(HostPattern.parse("*.corp.test")!))
        #expect(constraints.permits(host: "a.corp.test"))
        #expect(!constraints.permits(host: "corp.test"))
    }

    @Test func theConstraintsReadBackFromACertificateAreTheOnesWritten() throws {
        let hosts = patterns("api.example.com, *.corp.test, 127.0.0.1, [fd00::5]")
        let ca = try LocalCA.make(permitting: hosts, now: wallClockEpochSeconds())
        #expect(NameConstraints(of: ca.root) == NameConstraints(permitting: hosts))
        #expect(NameConstraints(of: ca.intermediate) == NameConstraints(permitting: hosts))
    }

    @Test(arguments: [
        ("API.Test", LeafHost.dns("api.test")), ("a-b_c.corp.test", .dns("a-b_c.corp.test")),
        ("127.0.0.1", .ip([127, 0, 0, 1])), ("::1", .ip([UInt8](repeating: 0, count: 15) + [1])),
    ])
    func leafHostsAreNamesOrAddresses(text: String, expected: LeafHost) {
        #expect(LeafHost(text) == expected)
    }

    @Test(arguments: [
        "", "a..b", ".a", "a.", "a b", "a,DNS:evil.test", "*.a.test", "é.test",
        String(repeating: "a", count: 64) + ".test",
    ])
    func anythingElseIsNoLeafHost(text: String) {
        #expect(LeafHost(text) == nil)
    }
}
