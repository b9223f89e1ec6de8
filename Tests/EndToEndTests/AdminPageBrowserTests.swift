import BearerTestSupport
import Foundation
import Testing

/// The admin page in a real browser: headless Chromium driven over its DevTools protocol (a small
/// python3-websockets client, `driver`) against the demo. The page loads with no console error or
/// failed resource, shows the session, its countdown moves, its Refresh button's POST passes the
/// admin's Origin check and shows up in the chart's data within two seconds; a screenshot is kept.
@Suite(.requires(.chromium), .requires(.pythonWebSockets))
struct AdminPageBrowserTests {
    @Test func thePageLoadsCleanlyCountsDownAndChartsARefresh() throws {
        let proxy = try ProxyProcess(["--demo", "--listen", "127.0.0.1:0"])
        #expect(proxy.waitUntilListening() != nil)
        let admin = try #require(word(startingWith: "admin=", in: proxy.standardError)?.dropFirst(6))
        let folder = temporaryDirectory()
        let driver = folder + "/admin-page-cdp.py"
        try Self.driver.write(toFile: driver, atomically: true, encoding: .utf8)
        let screenshot = folder + "/admin-page.png"
        let outcome = try ExternalTools.run(
            [ExternalTools.debianPython, "-I", driver, "http://\(admin)/", screenshot, ExternalTool.chromium.program],
            timeout: .seconds(120)
        )
        #expect(proxy.stop() == 0)
        #expect(outcome.status == 0, "the driver failed: \(outcome.standardError)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any],
            "no report: \(outcome.standardOutput) \(outcome.standardError)"
        )
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

    /// Starts Chromium headless with a DevTools port of its own (from the line it writes when it
    /// listens), opens the page, checks it (each wait a condition the page looks at on every change
    /// of its document, bounded), writes the screenshot, prints a JSON report, and ends the browser.
    /// `python3 -I driver ADMIN_URL PNG CHROMIUM [SNAPSHOTS]` also makes docs/admin-page.png.
    static let driver = #"""
        import asyncio, base64, json, shutil, subprocess, sys, tempfile, threading, urllib.request
        import websockets

        admin, screenshot, chromium = sys.argv[1], sys.argv[2], sys.argv[3]
        # Snapshots the page draws before the screenshot (more: a fuller chart).
        shown = int(sys.argv[4]) if len(sys.argv) > 4 else 3
        profile = tempfile.mkdtemp(prefix="bearer-chromium-")
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
