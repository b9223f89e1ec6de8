import BearerIO
import Foundation

/// The test certificates in Tests/Fixtures/tls: a CA, and servers it signed.
package enum TLSFixtures {
    package static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/tls")
    package static var caFile: String { directory.appendingPathComponent("ca.pem").path }

    package static func server(_ name: String = "server") throws -> TLSContext {
        try TLSContext.server(
            certificateChainFile: directory.appendingPathComponent("\(name).pem").path,
            privateKeyFile: directory.appendingPathComponent("\(name).key").path
        )
    }
}
