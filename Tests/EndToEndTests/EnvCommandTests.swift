import BearerCore
import Foundation
import Glibc
import Testing

/// `bearer-proxy env` against the built binary: its exact output, and what a shell makes of it.
@Suite struct EnvCommandTests {
    /// A folder of its own, with a quote and a blank in its name: the CA's paths must survive the quoting.
    let base: String = {
        let path = temporaryDirectory() + "/it's a dir"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    func config(_ text: String) -> String {
        let path = self.base + "/proxy-\(UInt32.random(in: 0...UInt32.max)).conf"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    @Test func withInterceptionEveryVariableShellQuotedAndTheBundleMade() throws {
        let config = self.config(
            """
            listen = 127.0.0.1:8123
            upstream = http://127.0.0.1:3000
            access_token = ${E2E_ENV_TOKEN}
            tls_intercept = on
            ca_dir = \(self.base)/ca

            """
        )
        let result = try ProxyProcess.run(
            ["env", "--config", config],
            environment: ["E2E_ENV_TOKEN": "env-token-88d2"]
        )
        #expect(result.status == 0)
        let quoted = self.base.replacingOccurrences(of: "'", with: #"'\''"#)
        #expect(
            result.stdout == """
                export http_proxy='http://127.0.0.1:8123'
                export https_proxy='http://127.0.0.1:8123'
                export HTTP_PROXY='http://127.0.0.1:8123'
                export HTTPS_PROXY='http://127.0.0.1:8123'
                export NO_PROXY='localhost,::1'
                export no_proxy='localhost,::1'
                export SSL_CERT_FILE='\(quoted)/ca/bundle.pem'
                export REQUESTS_CA_BUNDLE='\(quoted)/ca/bundle.pem'
                export CURL_CA_BUNDLE='\(quoted)/ca/bundle.pem'
                export GIT_SSL_CAINFO='\(quoted)/ca/bundle.pem'
                export NODE_EXTRA_CA_CERTS='\(quoted)/ca/ca.pem'
                export BEARER_PROXY_URL='http://127.0.0.1:8123'

                """
        )
        #expect(
            result.stderr
                == "Made a new local CA in \(self.base)/ca for 127.0.0.1: clients must trust its ca.pem.\n"
        )
        #expect(FileManager.default.fileExists(atPath: self.base + "/ca/bundle.pem"))
        #expect(!result.stdout.contains("env-token-88d2") && !result.stderr.contains("env-token-88d2"))

        // What `eval "$(bearer-proxy env)"` leaves in a POSIX shell.
        let script = self.base + "/exports.sh"
        _ = FileManager.default.createFile(atPath: script, contents: Data(result.stdout.utf8))
        // sh -c SCRIPT sh BINARY EXPORTS: $2 is the file of export lines.
        let shell = try ProxyProcess(
            [script],
            launcher: [
                "/bin/sh", "-c",
                #"eval "$(cat "$2")"; printf '%s\n' "$SSL_CERT_FILE" "$NO_PROXY" "$https_proxy""#, "sh",
            ]
        )
        #expect(shell.waitForExit() == 0)
        #expect(shell.standardOutput == "\(self.base)/ca/bundle.pem\nlocalhost,::1\nhttp://127.0.0.1:8123\n")

        // A second run finds the CA and the bundle: nothing said, the same lines.
        let again = try ProxyProcess.run(["env", "--config", config], environment: ["E2E_ENV_TOKEN": "env-token-88d2"])
        #expect(again.status == 0)
        #expect(again.stdout == result.stdout)
        #expect(again.stderr == "")
    }

    /// A secret kept out of the shell (the service's EnvironmentFile has it) does not stop `env`,
    /// which uses none: the same lines as without the key. A variable in a key `env` reads still
    /// must be set; the proxy, `--check` and `run` still need the secret.
    @Test func anUnsetVariableInASecretKeyIsNoErrorButOneInTheUpstreamIs() throws {
        let common = "listen = 127.0.0.1:8126\ntls_intercept = on\nca_dir = \(self.base)/ca-unset\n"
        let withoutToken = self.config("upstream = http://127.0.0.1:3000\n" + common)
        let expected = try ProxyProcess.run(["env", "--config", withoutToken])
        #expect(expected.status == 0, "stderr: \(expected.stderr)")
        let unsetToken = self.config(
            "upstream = http://127.0.0.1:3000\naccess_token = ${E2E_ENV_UNSET_TOKEN}\n"
                + "client_secret = ${E2E_ENV_UNSET_SECRET}\nsession_store = ${E2E_ENV_UNSET_STORE}\n" + common
        )
        let result = try ProxyProcess.run(["env", "--config", unsetToken])
        #expect(result.status == 0)
        #expect(result.stdout == expected.stdout)
        #expect(result.stderr == "")
        #expect(!result.stdout.contains("${"))

        let unsetUpstream = self.config("upstream = ${E2E_ENV_UNSET_API_URL}\n" + common)
        let failed = try ProxyProcess.run(["env", "--config", unsetUpstream])
        #expect(failed.status == 1)
        #expect(failed.stdout == "")
        #expect(
            failed.stderr
                == "Error: \(unsetUpstream):1: upstream: environment variable E2E_ENV_UNSET_API_URL is not set\n"
        )

        let unsetError = "Error: \(unsetToken):2: access_token: environment variable E2E_ENV_UNSET_TOKEN is not set\n"
        for arguments in [["--check", "--config", unsetToken], ["run", "--config", unsetToken, "--", "/bin/true"]] {
            let strict = try ProxyProcess.run(arguments)
            #expect(strict.status == 1, "\(arguments)")
            #expect(strict.stderr.hasPrefix(unsetError), "\(arguments): \(strict.stderr)")
        }
    }

    /// Without a config file, a subcommand's hint offers what its own command line takes: `ca`, `env`
    /// and `run` have no `--upstream` and no `--demo` (the proxy's hint offered both).
    @Test(arguments: [["ca"], ["env"], ["run", "--", "/bin/true"]])
    func withoutAConfigASubcommandIsToldToPassConfig(arguments: [String]) throws {
        let home = self.base + "/empty-home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let result = try ProxyProcess.run(arguments, environment: ["HOME": home, "XDG_CONFIG_HOME": home + "/.config"])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "Error: configuration: upstream: required: no config file was given (--config FILE) and \(home)/.config/bearer-proxy/proxy.conf does not exist; pass --config FILE\n",
            "\(arguments)"
        )
    }

    @Test func withoutInterceptionTheProxyAloneAndEveryLoopbackNameDirect() throws {
        let config = self.config("upstream = https://api.example.com\nca_dir = \(self.base)/ca\n")
        let result = try ProxyProcess.run(["env", "--config", config, "--listen", "[::1]:8124"])
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                export http_proxy='http://[::1]:8124'
                export https_proxy='http://[::1]:8124'
                export HTTP_PROXY='http://[::1]:8124'
                export HTTPS_PROXY='http://[::1]:8124'
                export NO_PROXY='localhost,127.0.0.1,::1'
                export no_proxy='localhost,127.0.0.1,::1'
                export BEARER_PROXY_URL='http://[::1]:8124'

                """
        )
        #expect(!FileManager.default.fileExists(atPath: self.base + "/ca"), "no CA without tls_intercept")
    }

    @Test func aUnixSocketOrAPortPickedAtStartCannotBeAnHTTPProxy() throws {
        let unix = self.config("listen = unix:/tmp/api.sock\nupstream = https://api.example.com\n")
        let unixResult = try ProxyProcess.run(["env", "--config", unix])
        #expect(unixResult.status == 1)
        #expect(unixResult.stdout == "")
        #expect(
            unixResult.stderr
                == "Error: \(unix):1: listen: a unix socket cannot be an http_proxy (clients take http://HOST:PORT): listen on 127.0.0.1:PORT too, or give --listen 127.0.0.1:PORT\n"
        )
        let both = self.config("listen = unix:/tmp/api.sock, 127.0.0.1:8125\nupstream = https://api.example.com\n")
        #expect(
            try ProxyProcess.run(["env", "--config", both]).stdout.hasPrefix(
                "export http_proxy='http://127.0.0.1:8125'\n"
            )
        )
        let anyPort = self.config("listen = 127.0.0.1:0\nupstream = https://api.example.com\n")
        let anyResult = try ProxyProcess.run(["env", "--config", anyPort])
        #expect(anyResult.status == 1)
        #expect(
            anyResult.stderr
                == "Error: \(anyPort):1: listen: port 0 is picked when the proxy starts, so env cannot name it: give the proxy a fixed port (bearer-proxy run starts a proxy of its own on a free port)\n"
        )
    }
}
