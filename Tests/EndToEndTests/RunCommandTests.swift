import BearerCore
import BearerDemo
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// `bearer-proxy run -- CMD` against the built binary, CMD a small Python or shell script. Unless a
/// test says otherwise, `run` is started in a session of its own (`setsid`): it has no terminal,
/// whether or not the tests were started from one.
@Suite struct RunCommandTests {
    static let python = "/usr/bin/python3"

    /// A folder of its own for the CA, the configs, the scripts and what they write.
    let base: String = {
        let path = temporaryDirectory()
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    func write(_ name: String, _ text: String) -> String {
        let path = self.base + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// A config for `upstream`, its CA in the test's folder; `extra` (default: a token command, so
    /// that start-up has nothing to warn about).
    func config(upstream: String, _ extra: String = "token_command = /bin/echo run-e2e-token") -> String {
        self.write(
            "proxy-\(UInt32.random(in: 0...UInt32.max)).conf",
            "upstream = \(upstream)\nca_dir = \(self.base)/ca\n\(extra)\n"
        )
    }

    /// `bearer-proxy run ARGUMENTS` with no terminal; `setsid --wait` passes its exit status on.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> ProxyProcess {
        try ProxyProcess(
            ["run"] + arguments,
            environment: environment,
            launcher: ["/usr/bin/setsid", "--fork", "--wait"]
        )
    }

    /// The first line of stdout that starts with `prefix`, once it is there (bounded wait).
    func line(startingWith prefix: String, of process: ProxyProcess) -> String? {
        var found: String?
        _ = waitUntil(timeout: .seconds(20)) {
            found = process.standardOutput.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
            return found != nil || !process.process.isRunning
        }
        return found ?? process.standardOutput.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
    }

    @Test func theChildReachesTheBaseURLWithTheTokenAndItsEnvironmentHoldsNoSecret() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["run-access-6f1d"])
        try upstream.start()
        defer { upstream.stop() }
        let secrets = [
            "E2E_RUN_ACCESS": "run-access-6f1d", "E2E_RUN_CLIENT_SECRET": "run-client-secret-93ab",
            "E2E_RUN_PASSWORD": "run-password-27c4",
        ]
        let config = self.config(
            upstream: "${E2E_RUN_UPSTREAM}",
            """
            access_token = ${E2E_RUN_ACCESS}
            token_url = http://127.0.0.1:9/token
            grant_type = password
            client_id = run-test
            client_secret = ${E2E_RUN_CLIENT_SECRET}
            username = alice
            password = ${E2E_RUN_PASSWORD}
            """
        )
        let dump = self.base + "/environment"
        let child = self.write(
            "child.py",
            """
            import os, sys, urllib.request
            with open(sys.argv[1], "w") as f:
                for name, value in sorted(os.environ.items()):
                    f.write(f"{name}={value}\\n")
            print(urllib.request.urlopen(os.environ["BEARER_PROXY_URL"] + "/through-base-url").read().decode())
            """
        )
        var environment = secrets
        environment["E2E_RUN_UPSTREAM"] = upstream.baseURL
        let run = try self.run(["--config", config, "--", Self.python, child, dump], environment: environment)
        #expect(run.waitForExit() == 0, "stderr: \(run.standardError)")
        let request = try #require(upstream.requests.first { $0.target == "/through-base-url" })
        #expect(request.header("authorization") == "Bearer run-access-6f1d")
        #expect(run.standardOutput.contains("through-base-url"), "the child printed the answer")
        #expect(
            run.standardError.split(separator: "\n").allSatisfy { $0.contains(" info made a local CA; ") },
            "run logs at warn: nothing went wrong, and it said once that it made the CA: \(run.standardError)"
        )

        let variables = Dictionary(
            self.text(dump).split(separator: "\n").map { line in
                let equals = line.firstIndex(of: "=")!
                return (String(line[..<equals]), String(line[line.index(after: equals)...]))
            },
            uniquingKeysWith: { first, _ in first }
        )
        let dumped = self.text(dump)
        for (name, value) in secrets {
            let isNamed = variables[name] != nil
            let isAnywhere = dumped.contains(value)
            #expect(!isNamed, "\(name) reached the child")
            #expect(!isAnywhere, "the value of \(name) reached the child")
        }
        #expect(variables["E2E_RUN_UPSTREAM"] == upstream.baseURL, "a variable of a key that is no secret stays")
        let url = try #require(variables["BEARER_PROXY_URL"])
        #expect(url.hasPrefix("http://127.0.0.1:") && url != "http://127.0.0.1:0")
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] { #expect(variables[name] == url) }
        #expect(variables["NO_PROXY"] == "localhost,::1", "the upstream is on 127.0.0.1: it must go through the proxy")
        #expect(variables["no_proxy"] == "localhost,::1")
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"] {
            #expect(variables[name] == self.base + "/ca/bundle.pem")
        }
        #expect(variables["NODE_EXTRA_CA_CERTS"] == self.base + "/ca/ca.pem")
        #expect(self.text(self.base + "/ca/bundle.pem").hasSuffix(self.text(self.base + "/ca/ca.pem")))
    }

    /// The child reaches an inject host over https through HTTPS_PROXY, trusting SSL_CERT_FILE: the
    /// proxy terminates the CONNECT tunnel's TLS with a leaf from the local CA and adds the token.
    @Test func theChildReachesAnInjectHostOverHTTPSThroughTheProxy() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls")
        let tls = try TLSContext.server(
            certificateChainFile: fixtures.appendingPathComponent("server.pem").path,
            privateKeyFile: fixtures.appendingPathComponent("server.key").path
        )
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["run-https-token-51e0"], tls: tls)
        try upstream.start()
        defer { upstream.stop() }
        let config = self.config(
            upstream: "https://127.0.0.1:\(upstream.port)",
            "access_token = ${E2E_RUN_HTTPS_TOKEN}\nca_file = \(fixtures.appendingPathComponent("ca.pem").path)"
        )
        let child = self.write(
            "https.py",
            """
            import os, sys, urllib.request
            print(urllib.request.urlopen(sys.argv[1] + "/through-https-proxy").read().decode())
            print(urllib.request.urlopen(os.environ["BEARER_PROXY_URL"] + "/through-base-url").read().decode())
            """
        )
        let run = try self.run(
            ["--config", config, "--", Self.python, child, "https://127.0.0.1:\(upstream.port)"],
            environment: ["E2E_RUN_HTTPS_TOKEN": "run-https-token-51e0"]
        )
        #expect(run.waitForExit() == 0, "stderr: \(run.standardError)")
        for target in ["/through-https-proxy", "/through-base-url"] {
            let request = try #require(upstream.requests.first { $0.target == target }, "\(target) never arrived")
            #expect(request.header("authorization") == "Bearer run-https-token-51e0")
        }
        // The mock API echoes the request's headers, so the child's output holds the token; the log must not.
        #expect(!run.standardError.contains("run-https-token-51e0"), "the token reached the log")
    }

    /// `--only-inject-hosts`: the child reaches its API with the token, and another host not at all
    /// (403 from the proxy; that host sees nothing).
    @Test func onlyInjectHostsRefusesEveryOtherHost() throws {
        let upstream = MockUpstream(group: e2eMockGroup, acceptedTokens: ["run-only-token-8c2e"])
        try upstream.start()
        defer { upstream.stop() }
        let other = MockUpstream(group: e2eMockGroup, acceptedTokens: [])
        try other.start()
        defer { other.stop() }
        let config = self.config(upstream: upstream.baseURL, "access_token = run-only-token-8c2e")
        let child = self.write(
            "only.py",
            """
            import os, sys, urllib.request, urllib.error
            print(urllib.request.urlopen(os.environ["BEARER_PROXY_URL"] + "/own").status)
            try:
                urllib.request.urlopen(sys.argv[1] + "/elsewhere")
                print("reached")
            except urllib.error.HTTPError as error:
                print(error.code)
            """
        )
        let run = try self.run(
            ["--config", config, "--only-inject-hosts", "--no-intercept", "--", Self.python, child, other.baseURL]
        )
        #expect(run.waitForExit() == 0, "stderr: \(run.standardError)")
        #expect(run.standardOutput == "200\n403\n")
        #expect(
            upstream.requests.first { $0.target == "/own" }?.header("authorization") == "Bearer run-only-token-8c2e"
        )
        #expect(other.requests.isEmpty, "the other host saw nothing")
    }

    /// The first run makes the local CA in the default place ($XDG_DATA_HOME here, never the
    /// developer's own): it says so once, naming the folder, the hosts the CA may vouch for and how
    /// other clients trust it; the next run loads that CA and says nothing.
    @Test func runSaysOnceThatItMadeTheLocalCA() throws {
        let environment = ["HOME": self.base + "/home", "XDG_DATA_HOME": self.base + "/data"]
        let config = self.write(
            "default-ca.conf",
            """
            upstream = http://127.0.0.1:9
            inject_hosts = 127.0.0.1:9, *.example.org
            token_command = /bin/echo run-e2e-token

            """
        )
        let child = ["--", "/bin/sh", "-c", "exit 0"]
        let first = try self.run(["--config", config] + child, environment: environment)
        #expect(first.waitForExit() == 0, "stderr: \(first.standardError)")
        #expect(first.standardError.filter { $0 == "\n" }.count == 1, "\(first.standardError)")
        #expect(
            first.standardError.hasSuffix(
                " info made a local CA; clients must trust its ca.pem ca_dir=\(self.base)/data/bearer-proxy/ca permits=\"127.0.0.1, *.example.org\" trust_with=\"bearer-proxy ca --config \(config) --bundle\"\n"
            ),
            "\(first.standardError)"
        )
        #expect(FileManager.default.fileExists(atPath: self.base + "/data/bearer-proxy/ca/ca.pem"))

        let second = try self.run(["--config", config] + child, environment: environment)
        #expect(second.waitForExit() == 0)
        #expect(second.standardError == "", "the CA was loaded, not made")
    }

    /// A CA made for another config's inject hosts stops run with the proxy's sentence, which under
    /// run also offers --no-intercept; with it the program runs.
    @Test func underRunACAMadeForOtherHostsOffersNoIntercept() throws {
        let child = ["--", "/bin/sh", "-c", "exit 0"]
        let first = try self.run(["--config", self.config(upstream: "http://127.0.0.1:9")] + child)
        #expect(first.waitForExit() == 0, "stderr: \(first.standardError)")
        let other = self.config(
            upstream: "http://127.0.0.1:9",
            "token_command = /bin/echo run-e2e-token\ninject_hosts = 127.0.0.1:9, api.example.com"
        )
        let refused = try self.run(["--config", other] + child)
        #expect(refused.waitForExit() == 1)
        #expect(
            refused.standardError
                == "Error: inject host api.example.com is outside the local CA's name constraints (\(self.base)/ca/ca.pem permits DNS:invalid, IP:127.0.0.1/32, IP:::/128): the CA in that folder was made for other inject hosts (another config using it?): give this config a ca_dir of its own, or run `bearer-proxy ca --renew` to replace it with one for the current inject_hosts, then trust the new ca.pem; or pass --no-intercept to bearer-proxy run, if the program calls the API through BEARER_PROXY_URL (or http://) rather than https://\n"
        )
        let plain = try self.run(["--config", other, "--no-intercept"] + child)
        #expect(plain.waitForExit() == 0, "stderr: \(plain.standardError)")
    }

    @Test(arguments: [("exit 0", Int32(0)), ("exit 7", 7), ("kill -TERM $$", 128 + SIGTERM)])
    func runExitsWithTheChildsStatusOr128PlusItsSignal(script: String, status: Int32) throws {
        let config = self.config(upstream: "http://127.0.0.1:9")
        let run = try self.run(["--config", config, "--", "/bin/sh", "-c", script])
        #expect(run.waitForExit() == status, "stderr: \(run.standardError)")
    }

    /// Without a terminal the child leads a process group of its own, and a SIGTERM sent to `run`
    /// reaches it through `run`; it exits 3, and so does `run`.
    @Test func sigtermToRunWithoutATerminalReachesTheChild() throws {
        let config = self.config(upstream: "http://127.0.0.1:9")
        let child = self.write(
            "trap.py",
            """
            import os, signal, sys
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
            print(f"ready {os.getppid()} own-group={os.getpgrp() == os.getpid()}", flush=True)
            while True:
                signal.pause()
            """
        )
        let run = try self.run(["--config", config, "--", Self.python, child])
        let ready = try #require(self.line(startingWith: "ready ", of: run), "stderr: \(run.standardError)")
        let fields = ready.split(separator: " ")
        let runPID = try #require(pid_t(fields[1]))
        #expect(fields[2] == "own-group=True")
        #expect(kill(runPID, SIGTERM) == 0)
        #expect(run.waitForExit() == 3, "stderr: \(run.standardError)")
    }

    /// A bad config, a taken port or a unix socket: one line, exit 1, and the child never ran.
    @Test func aFailedStartStartsNoChild() throws {
        let marker = self.base + "/child-ran"
        let child = ["--", "/bin/sh", "-c", "touch '\(marker)'"]
        let bad = self.write("bad.conf", "upstream = http://127.0.0.1:9\nrefresh_skew = soon\n")
        let badRun = try self.run(["--config", bad] + child)
        #expect(badRun.waitForExit() == 1)
        #expect(
            badRun.standardError
                == "Error: \(bad):2: refresh_skew: invalid duration 'soon' (expected e.g. 500ms, 30s, 5m)\n"
        )

        let taken = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(taken) }
        let port = try #require(Socket.localAddress(taken)?.port)
        let config = self.config(upstream: "http://127.0.0.1:9")
        let takenRun = try self.run(["--config", config, "--listen", "127.0.0.1:\(port)"] + child)
        #expect(takenRun.waitForExit() == 1)
        #expect(takenRun.standardError.hasPrefix("Error: cannot listen on 127.0.0.1:\(port): "))
        #expect(takenRun.standardError.filter { $0 == "\n" }.count == 1, "\(takenRun.standardError)")

        let unixRun = try self.run(["--config", config, "--listen", "unix:\(self.base)/s.sock"] + child)
        #expect(unixRun.waitForExit() == 1)
        #expect(
            unixRun.standardError
                == "Error: command line (--listen): listen: a unix socket cannot be an http_proxy (clients take http://HOST:PORT): listen on 127.0.0.1:PORT too, or give --listen 127.0.0.1:PORT\n"
        )
        #expect(!FileManager.default.fileExists(atPath: marker), "the child ran")
    }

    @Test func aProgramNotFoundExits127AndOneNotRunnable126() throws {
        let config = self.config(upstream: "http://127.0.0.1:9")
        let run = try self.run(["--config", config, "--", "no-such-program-e2e-run"])
        #expect(run.waitForExit() == 127)
        // The first run of the test's config made its CA, and said so first.
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].contains(" info made a local CA; "), "\(run.standardError)")
        #expect(lines.last == "Error: cannot run 'no-such-program-e2e-run': No such file or directory")
        let notExecutable = self.write("not-executable.sh", "exit 0\n")
        let refused = try self.run(["--config", config, "--", notExecutable])
        #expect(refused.waitForExit() == 126)
        #expect(refused.standardError == "Error: cannot run '\(notExecutable)': Permission denied\n")
    }

    /// Once the child has exited, the proxy is gone (its port refuses connections) and so is every
    /// process `run` started: the child was waited for, not left behind.
    @Test func afterTheChildExitsNothingListensAndNoProcessIsLeft() throws {
        let config = self.config(upstream: "http://127.0.0.1:9")
        let child = self.write(
            "bye.py",
            """
            import os, socket, urllib.parse
            url = urllib.parse.urlsplit(os.environ['BEARER_PROXY_URL'])
            print(f"child {os.getpid()} {os.getppid()} {os.environ['BEARER_PROXY_URL']}", flush=True)
            # While the child runs, the proxy accepts.
            socket.create_connection((url.hostname, url.port), timeout=10).close()
            """
        )
        let run = try self.run(["--config", config, "--", Self.python, child])
        #expect(run.waitForExit() == 0, "stderr: \(run.standardError)")
        let fields = try #require(self.line(startingWith: "child ", of: run)).split(separator: " ")
        let childPID = try #require(pid_t(fields[1]))
        let runPID = try #require(pid_t(fields[2]))
        let port = try #require(Int(fields[3].split(separator: ":").last!))
        #expect(kill(childPID, 0) == -1 && errno == ESRCH, "the child is still there")
        #expect(kill(runPID, 0) == -1 && errno == ESRCH, "run is still there")
        #expect(throws: (any Error).self, "something listens on the proxy's port") {
            try BlockingHTTPClient(connectingTo: SocketAddress(ipAddress: "127.0.0.1", port: port)!)
        }
    }

    /// The child starts with no signal blocked (run blocks its own for its signal thread), and keeps
    /// ignoring what run was started ignoring: `nohup bearer-proxy run -- …` still ignores SIGHUP.
    @Test func theChildBlocksNothingAndIgnoresWhatRunWasStartedIgnoring() throws {
        let config = self.config(upstream: "http://127.0.0.1:9")
        let child = ["--", "/bin/sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status"]
        let plain = try self.run(["--config", config] + child)
        #expect(plain.waitForExit() == 0)
        let nohup = try ProxyProcess(
            ["run", "--config", config] + child,
            launcher: ["/usr/bin/setsid", "--fork", "--wait", "/bin/sh", "-c", "trap '' HUP; exec \"$0\" \"$@\""]
        )
        #expect(nohup.waitForExit() == 0)
        func mask(_ name: String, _ output: String) -> UInt64? {
            output.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { UInt64($0.split(separator: "\t").last!, radix: 16) }
        }
        let hangUp = UInt64(1) << (SIGHUP - 1)
        let brokenPipe = UInt64(1) << (SIGPIPE - 1)
        #expect(mask("SigIgn", plain.standardOutput).map { $0 & brokenPipe } == 0, "run's own ignored SIGPIPE leaked")
        #expect(mask("SigBlk", plain.standardOutput) == 0)
        #expect(mask("SigBlk", nohup.standardOutput) == 0)
        #expect(mask("SigIgn", plain.standardOutput).map { $0 & hangUp } == 0)
        #expect(mask("SigIgn", nohup.standardOutput).map { $0 & hangUp } == hangUp)
    }

    /// Under a terminal the child shares run's foreground process group, so one Ctrl-C reaches it
    /// from the terminal, and run must not pass it on a second time; a SIGINT sent to run with kill
    /// is passed on. Run is stopped while Ctrl-C is typed, so that the child has taken the terminal's
    /// SIGINT before run could pass a second one (two pending SIGINTs would merge into one and hide
    /// it). The final SIGTERM is sent while run is still stopped: run takes its two pending signals
    /// lowest number first, so whatever it does with the terminal's SIGINT it does before it passes the
    /// SIGTERM on; and the child takes pending signals lowest number first too, so a second SIGINT
    /// would be counted.
    @Test func underATerminalOneCtrlCReachesTheChildOnce() throws {
        let config = self.config(upstream: "http://127.0.0.1:9")
        let child = self.write(
            "count.py",
            """
            import os, signal
            signals = {signal.SIGINT, signal.SIGTERM}
            signal.pthread_sigmask(signal.SIG_BLOCK, signals)
            print(f"ready same-group={os.getpgrp() == os.getpgid(os.getppid())}", flush=True)
            count = 0
            while True:
                info = signal.sigwaitinfo(signals)
                if info.si_signo == signal.SIGTERM:
                    print(f"count {count}", flush=True)
                    break
                count += 1
                sender = "terminal" if info.si_code == 0x80 else f"pid {info.si_pid}"
                print(f"SIGINT {count} from {sender}", flush=True)
            """
        )
        let harness = self.write(
            "terminal.py",
            """
            import os, pty, select, signal, sys, time
            binary, config, child = sys.argv[1:4]
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(binary, [binary, "run", "--config", config, "--", sys.executable, child])
            output = b""
            def wait_for(text):
                global output
                deadline = time.time() + 20
                while text.encode() not in output:
                    ready, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
                    if not ready:
                        sys.exit(f"no {text!r} after 20 s; the terminal showed {output!r}")
                    try:
                        output += os.read(fd, 4096)
                    except OSError:
                        sys.exit(f"the terminal closed before {text!r}; it showed {output!r}")
            wait_for("ready")
            os.kill(pid, signal.SIGINT)
            wait_for("SIGINT 1 from")
            os.kill(pid, signal.SIGSTOP)
            os.write(fd, b"\\x03")
            wait_for("SIGINT 2 from")
            os.kill(pid, signal.SIGTERM)
            os.kill(pid, signal.SIGCONT)
            wait_for("count")
            _, status = os.waitpid(pid, 0)
            print(f"run pid {pid}")
            print(output.decode(errors="replace").replace("\\r", "").replace("^C", ""))
            print(f"exit {os.waitstatus_to_exitcode(status)}")
            """
        )
        // python3 -u terminal.py BINARY CONFIG CHILD
        let terminal = try ProxyProcess([config, child], launcher: [Self.python, "-u", harness])
        #expect(terminal.waitForExit(timeout: .seconds(60)) == 0, "\(terminal.standardError)")
        let lines = terminal.standardOutput.split(separator: "\n").map(String.init)
        let runPID = try #require(lines.first { $0.hasPrefix("run pid ") }).dropFirst("run pid ".count)
        #expect(lines.contains("ready same-group=True"))
        #expect(
            lines.filter { $0.hasPrefix("SIGINT") || $0.hasPrefix("count") }
                == ["SIGINT 1 from pid \(runPID)", "SIGINT 2 from terminal", "count 2"],
            "\(terminal.standardOutput)"
        )
        #expect(lines.last == "exit 0")
    }
}
