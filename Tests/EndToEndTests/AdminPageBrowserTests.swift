import BearerDemo
import BearerTestSupport
import Foundation
import Testing

/// The admin page in a real browser: headless Chromium driven over its DevTools protocol (a small
/// python3-websockets client, `driver`) against the demo. The page loads with no console error or
/// failed resource, shows the session, its countdown moves, its Refresh button's POST passes the
/// admin's Origin check and shows up in the chart's data within two seconds; a screenshot is kept.
/// Under a storm (every token revoked while clients send, behind a slow token endpoint), the chart's
/// parked count rises and falls back to 0, with the session's 401s in it.
@Suite(.requires(.chromium), .requires(.pythonWebSockets))
struct AdminPageBrowserTests {
    @Test func thePageLoadsCleanlyCountsDownAndChartsARefresh() throws {
        let proxy = try ProxyProcess(["--demo", "--listen", "127.0.0.1:0"])
        #expect(proxy.waitUntilListening() != nil)
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let screenshot = temporaryDirectory() + "/admin-page.png"
        let outcome = try Self.runDriver(admin: String(admin), screenshot: screenshot)
        #expect(proxy.stop() == 0)
        let report = try Self.report(of: outcome)
        #expect(report["loaded"] as? Bool == true, "no two snapshots drawn")
        #expect(report["errors"] as? [String] == [], "console errors")
        #expect(report["sessions"] as? [String] == ["default"])
        let countdown = report["countdown"] as? [Any]
        #expect(
            countdown?.count == 2 && countdown?[1] is String,
            "the countdown did not move: \(String(describing: countdown))"
        )
        let seen = try #require(report["refresh_seen_s"] as? Double, "the refresh is not in the chart's data")
        #expect(seen <= 2)
        #expect((report["outcome"] as? String)?.hasPrefix(#"200 {"outcome":"ok""#) == true)
        let page = report["page"] as? String ?? ""
        #expect(!page.contains("mock-access-"), "a token in the page")
        let png = try #require(FileManager.default.contents(atPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        print("admin page screenshot: \(screenshot)")
    }

    /// Eight clients of the driver's own send through the proxy; every token is revoked; the token
    /// endpoint takes 2.5 s, so the page's once-a-second snapshots see the requests parked behind the
    /// one refresh, then none once it is done. The screenshot is the page after the storm.
    @Test func aStormShowsTheParkedCountRiseAndFall() throws {
        let authority = MockTokenAuthority()
        var settings = MockTokenServer.Settings()
        settings.clientID = "page-client"
        settings.clientSecret = "page-secret-e2e"
        settings.delay = .milliseconds(2500)
        let tokens = MockTokenServer(group: e2eMockGroup, authority: authority, settings: settings)
        try tokens.start()
        defer { tokens.stop() }
        let upstream = MockUpstream(group: e2eMockGroup, authority: authority)
        try upstream.start()
        defer { upstream.stop() }
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            admin_listen = 127.0.0.1:0
            upstream = \(upstream.baseURL)
            token_url = \(tokens.url)
            client_id = page-client
            client_secret = page-secret-e2e
            """
        )
        let proxy = try ProxyProcess(["--config", config])
        let listening = try #require(proxy.waitUntilListening())
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let screenshot = temporaryDirectory() + "/admin-page-storm.png"
        let revoke = tokens.url.replacingOccurrences(of: "/oauth/token", with: MockTokenServer.revokeAllPath)
        let outcome = try Self.runDriver(
            admin: String(admin),
            screenshot: screenshot,
            extra: ["3", "http://\(listening)/whoami", revoke]
        )
        #expect(proxy.stop() == 0)
        let report = try Self.report(of: outcome)
        #expect(report["errors"] as? [String] == [], "console errors")
        let storm = try #require(report["storm"] as? [String: Any], "no storm in the report")
        #expect((storm["parked_peak"] as? Int ?? 0) >= 1, "the parked count did not rise: \(storm)")
        #expect(storm["fell"] as? Bool == true, "the parked count did not fall back to 0: \(storm)")
        #expect((storm["rejections_peak"] as? Double ?? 0) > 0, "no upstream 401 in the session's chart: \(storm)")
        #expect((storm["answered"] as? Int ?? 0) >= 8 && storm["failed"] as? Int == 0, "\(storm)")
        // One refresh for the storm: the token at start, the Refresh button's, and the storm's one.
        #expect(tokens.callCount == 3)
        let page = report["page"] as? String ?? ""
        for issued in 1...max(1, authority.issuedCount) {
            #expect(!page.contains("\(authority.prefix)\(issued)"), "a token in the page")
        }
        let png = try #require(FileManager.default.contents(atPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        print("admin page screenshot under a storm: \(screenshot)")
    }

    /// `driver` against the page at `admin`, writing `screenshot`; `extra`: its optional arguments.
    static func runDriver(admin: String, screenshot: String, extra: [String] = []) throws -> ExternalTools.Outcome {
        let driver = temporaryDirectory() + "/admin-page-cdp.py"
        try Self.driver.write(toFile: driver, atomically: true, encoding: .utf8)
        return try ExternalTools.run(
            [ExternalTools.debianPython, "-I", driver, "http://\(admin)/", screenshot, ExternalTool.chromium.program]
                + extra,
            timeout: .seconds(120)
        )
    }

    /// The driver's JSON report, after checking it ended well.
    static func report(of outcome: ExternalTools.Outcome) throws -> [String: Any] {
        #expect(outcome.status == 0, "the driver failed: \(outcome.standardError)")
        return try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any],
            "no report: \(outcome.standardOutput) \(outcome.standardError)"
        )
    }

    /// Starts Chromium headless with a DevTools port of its own (from the line it writes when it
    /// listens), opens the page, checks it (each wait a condition the page looks at on every change
    /// of its document, bounded), writes the screenshot, prints a JSON report, and ends the browser.
    /// `python3 -I driver ADMIN_URL PNG CHROMIUM [SNAPSHOTS [API_URL REVOKE_URL]]` also makes
    /// docs/admin-page.png. With API_URL and REVOKE_URL, a storm before the screenshot: eight threads
    /// GET API_URL through the proxy, REVOKE_URL is POSTed, and the report's `storm` says whether the
    /// first session's chart saw requests parked, and then none.
    static let driver = #"""
        import asyncio, base64, json, os, shutil, subprocess, sys, tempfile, threading, urllib.request
        import websockets

        admin, screenshot, chromium = sys.argv[1], sys.argv[2], sys.argv[3]
        # Snapshots the page draws before the screenshot (more: a fuller chart).
        shown = int(sys.argv[4]) if len(sys.argv) > 4 else 3
        api, revoke = (sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None)
        # Straight to the proxy and the mocks, whatever proxy the environment names.
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        class Load:
            # Eight clients sending to `api` until stopped (each a bounded number of requests).
            def __init__(self):
                self.stopping, self.answered, self.failed, self.lock = threading.Event(), 0, 0, threading.Lock()
                self.threads = [threading.Thread(target=self.client, daemon=True) for _ in range(8)]
                for thread in self.threads:
                    thread.start()

            def client(self):
                for _ in range(100000):
                    if self.stopping.is_set():
                        return
                    try:
                        ok = direct.open(api, timeout=30).status == 200
                    except Exception:
                        ok = False
                    with self.lock:
                        if ok:
                            self.answered += 1
                        else:
                            self.failed += 1

            def stop(self):
                self.stopping.set()
                for thread in self.threads:
                    thread.join(40)
        # Beside the screenshot, in the test's own folder: a browser process still writing after the
        # browser ended cannot leave it in TMPDIR.
        profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=os.path.dirname(os.path.abspath(screenshot)))
        browser = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             "--user-data-dir=" + profile, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             "--window-size=1280,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        # Waits for the event itself: in the page, a condition looked at on every change of the document,
        # bounded by a timer that gives up.
        UNTIL = """window.until = (test, seconds) => new Promise(resolve => {
          let done = false, observer;
          const finish = value => { if (!done) { done = true; observer.disconnect(); resolve(value); } };
          const look = () => { let value = null; try { value = test(); } catch (error) {} if (value) finish(value); };
          observer = new MutationObserver(look);
          observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
          setTimeout(() => finish(null), seconds * 1000);
          look();
        }); true"""

        def devtools_port():
            for line in browser.stderr:
                if line.startswith("DevTools listening on ws://"):
                    threading.Thread(target=lambda: [None for _ in browser.stderr], daemon=True).start()
                    return line.split("ws://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
            raise SystemExit("chromium ended before it listened")

        async def main():
            port = devtools_port()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?about:blank", method="PUT")
            target = json.load(urllib.request.urlopen(request, timeout=10))
            async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=10) as ws:
                ids, errors, pending, loaded = [0], [], {}, asyncio.Event()

                async def reader():
                    async for raw in ws:
                        message = json.loads(raw)
                        if "id" in message and message["id"] in pending:
                            pending.pop(message["id"]).set_result(message)
                        method, params = message.get("method"), message.get("params", {})
                        if method == "Page.loadEventFired":
                            loaded.set()
                        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                            errors.append("console: " + json.dumps(params.get("args")))
                        elif method == "Runtime.exceptionThrown":
                            errors.append("exception: " + json.dumps(params.get("exceptionDetails")))
                        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                            errors.append("log: " + params["entry"].get("text", ""))
                task = asyncio.ensure_future(reader())

                async def call(method, **params):
                    ids[0] += 1
                    future = asyncio.get_event_loop().create_future()
                    pending[ids[0]] = future
                    await ws.send(json.dumps({"id": ids[0], "method": method, "params": params}))
                    return (await asyncio.wait_for(future, shown + 60)).get("result", {})

                async def evaluate(expression):
                    result = await call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
                    return result.get("result", {}).get("value")

                async def until(expression, seconds):
                    return await evaluate(f"until(() => ({expression}), {seconds})")

                for domain in ("Runtime", "Log", "Page"):
                    await call(domain + ".enable")
                await call("Page.navigate", url=admin)
                await asyncio.wait_for(loaded.wait(), 20)
                await evaluate(UNTIL)
                countdown = "document.querySelector('.session dd.countdown').textContent"
                report = {}
                report["loaded"] = bool(await until("window.bearerPage && bearerPage.snapshots >= 2", 20))
                report["sessions"] = await evaluate("[...document.querySelectorAll('.session')].map(e => e.dataset.session)")
                first = await evaluate(countdown)
                report["countdown"] = [first, await until(f"{countdown} !== {json.dumps(first)} && {countdown}", 5)]
                await evaluate("window.clickedAt = performance.now() / 1000; document.querySelector('.session button.refresh').click(); true")
                report["refresh_seen_s"] = await until(
                    "Object.values(bearerPage.sessions)[0].some(p => p.refresh && p.at >= clickedAt)"
                    " && Math.round((performance.now() / 1000 - clickedAt) * 100) / 100", 2)
                outcome = "document.querySelector('.session .outcome').textContent"
                report["outcome"] = await until(f"/^[0-9]{{3}} /.test({outcome}) && {outcome}", 5)
                if api:
                    load = Load()
                    await evaluate("window.stormAt = performance.now() / 1000; true")
                    direct.open(urllib.request.Request(revoke, data=b"", method="POST"), timeout=10).read()
                    points = "Object.values(bearerPage.sessions)[0].filter(p => p.at >= stormAt)"
                    peak = await until(f"Math.max(0, ...{points}.map(p => p.parked))", 10)
                    fell = await until(
                        f"(() => {{ const ps = {points}; const top = ps.findIndex(p => p.parked > 0);"
                        " return top >= 0 && ps.slice(top).some(p => p.parked === 0); })()", 10)
                    await until(f"bearerPage.snapshots >= {shown} + 2", 10)
                    load.stop()
                    rejections = await evaluate(f"Math.max(0, ...{points}.map(p => p.rejections))")
                    report["storm"] = {"parked_peak": peak or 0, "fell": bool(fell), "rejections_peak": rejections,
                                       "answered": load.answered, "failed": load.failed}
                await until(f"bearerPage.snapshots >= {shown}", shown + 10)
                shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
                with open(screenshot, "wb") as out:
                    out.write(base64.b64decode(shot["data"]))
                report["errors"] = errors
                report["page"] = await evaluate("document.documentElement.outerHTML")
                task.cancel()
                print(json.dumps(report))

        try:
            asyncio.get_event_loop().run_until_complete(main())
        finally:
            browser.terminate()
            try:
                browser.wait(10)
            except subprocess.TimeoutExpired:
                browser.kill()
            shutil.rmtree(profile, ignore_errors=True)

        """#
}
