import BearerCore
import Foundation
import Testing

@testable import BearerCLI

@Suite struct DemoFlagTests {
    @Test(arguments: [
        (["--demo"], false), (["--demo", "json"], true), (["--demo=json"], true), (["--demo", "oauth2"], false),
        (["--demo", "json", "--listen", "127.0.0.1:0"], true), (["--demo", "--check"], false),
    ])
    func parsesTheDemoBackend(arguments: [String], isJSON: Bool) throws {
        let options = try ProxyCommand.parse(arguments)
        #expect(options.isDemo)
        #expect(options.isJSONDemo == isJSON)
    }

    @Test func refusesAnUnknownBackend() {
        #expect(throws: CommandLineError.unknownDemo("xml")) { try ProxyCommand.parse(["--demo", "xml"]) }
        #expect(
            CommandLineError.unknownDemo("xml").description
                == "Unknown demo variant 'xml': the only one is json (--demo json: a JSON login backend); plain --demo runs OAuth2"
        )
    }
}
