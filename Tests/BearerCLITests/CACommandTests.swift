import BearerCore
import BearerHTTP
import BearerIO
import BearerTestSupport
import COpenSSL
import Foundation
import Glibc
import Testing

@testable import BearerCLI

@Suite struct CACommandHelpTests {
    @Test func caHelpIsStable() {
        #expect(
            CACommand.syntax.helpText == """
                OVERVIEW: Print the absolute path of ca.pem, the local CA's root that HTTPS clients trust when
                tls_intercept is on. Makes the CA in ca_dir first when there is none (for the config's
                inject_hosts); an existing CA is never replaced except by --renew.

                USAGE: bearer-proxy ca [--config <file>] [--renew] [--bundle]

                OPTIONS:
                  --config <file>         The proxy's config file: inject_hosts and ca_dir.
                  --renew                 Make a new root and intermediate for the current inject_hosts first.
                                          Clients must then trust the new ca.pem; restart running proxies.
                  --bundle                Write bundle.pem (the system's CA certificates followed by ca.pem,
                                          for SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) and print its
                                          path instead.
                  -h, --help              Show help information.

                """
        )
    }

    @Test func parsesItsFlags() throws {
        #expect(
            try CACommand.parse(["--config", "p.conf", "--renew", "--bundle"])
                == CACommand.Options(configPath: "p.conf", renewsCA: true, writesBundle: true)
        )
        #expect(throws: CommandLineError.unknownOption("--device")) { try CACommand.parse(["--device"]) }
    }
}
