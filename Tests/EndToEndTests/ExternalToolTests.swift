import BearerIO
import BearerTestSupport
import Testing

/// The line a test skipped for a missing tool prints names exactly what was checked, and the Debian
/// package that provides it: "needs Debian's python3-requests" was printed on a machine whose own
/// `python3` has requests, and did not say that /usr/bin/python3 was the one asked.
@Suite struct ExternalToolTests {
    @Test func aPythonModuleIsLookedForInTheInterpreterTheReasonNames() throws {
        let folder = try ScratchSpace.newDirectory("python")
        // Stand-ins for an interpreter: one that has every module, one that has none.
        try AtomicFile.writeFlushed(Array("#!/bin/sh\nexit 0\n".utf8), to: folder + "/with", mode: 0o755)
        try AtomicFile.writeFlushed(Array("#!/bin/sh\nexit 1\n".utf8), to: folder + "/without", mode: 0o755)

        let found = ExternalTool.pythonModule("requests", interpreter: folder + "/with", package: "python3-requests")
        #expect(found.isInstalled && found.program == folder + "/with")

        let missing = ExternalTool.pythonModule(
            "requests",
            interpreter: folder + "/without",
            package: "python3-requests"
        )
        #expect(!missing.isInstalled)
        #expect(
            missing.skipReason == "needs \(folder)/without with the requests module (apt-get install python3-requests)"
        )
    }

    @Test func theToolsTheTestsNeedNameTheirPathsAndPackages() {
        #expect(
            ExternalTool.pythonRequests.skipReason
                == "needs /usr/bin/python3 with the requests module (apt-get install python3-requests)"
        )
        #expect(
            ExternalTool.pythonWebSockets.skipReason
                == "needs /usr/bin/python3 with the websockets module (apt-get install python3-websockets)"
        )
        #expect(
            ExternalTool.pythonAuthlib.skipReason
                == "needs /usr/bin/python3 with the authlib module (apt-get install python3-authlib)"
        )
        #expect(ExternalTool.curl.skipReason == "needs /usr/bin/curl (apt-get install curl)")
        #expect(
            ExternalTool.systemCAStore.skipReason
                == "needs /etc/ssl/certs/ca-certificates.crt (apt-get install ca-certificates)"
        )
        #expect(
            ExternalTool.redisServer.skipReason
                == "needs redis-server on PATH or in /usr/bin, /usr/sbin, /usr/local/bin (apt-get install redis-server)"
        )
        #expect(
            ExternalTool.openssl.skipReason == "needs openssl on PATH or in /usr/bin, /bin (apt-get install openssl)"
        )
    }

    @Test func aProgramLookedForOnPathIsRunFromWhereItWasFound() throws {
        let missing = ExternalTool.named("no-such-tool-here", orIn: ["/usr/bin"], package: "nothing")
        #expect(!missing.isInstalled && missing.program == "no-such-tool-here")
        let shell = ExternalTool.named("sh", orIn: ["/bin"], package: "dash")
        #expect(shell.isInstalled && shell.program.hasSuffix("/sh"))
    }
}
