/// The admin page (`GET /` on the admin listener) and its style sheet: all of it inside the binary,
/// nothing fetched from elsewhere. Its script is `AdminPageScript`, served as `/app.js`.
///
/// The Content-Security-Policy allows scripts and styles only from the listener itself (`'self'`),
/// with no `'unsafe-inline'`, no hash and no nonce: the script and the style sheet are files of their
/// own, so no inline script could run even if one got into the page, and a nonce (fresh randomness
/// per response) would buy nothing over `'self'` for files that never change. `connect-src 'self'`
/// is what `EventSource` and `fetch` need; everything else is refused.
enum AdminPage {
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>bearer-proxy</title>
        <link rel="stylesheet" href="/app.css">
        <link rel="icon" href="/icon.svg" type="image/svg+xml">
        <script src="/app.js" defer></script>
        </head>
        <body>
        <header>
          <h1>bearer-proxy</h1>
          <span id="connection" class="muted">connecting…</span>
          <span id="totals" class="muted"></span>
        </header>
        <main>
          <section id="sessions"></section>
          <section id="recent">
            <h2>Recent exchanges</h2>
            <p id="exchanges-note" class="muted"></p>
            <table id="exchanges">
              <thead><tr><th>time</th><th>session</th><th>method</th><th>host</th><th>path</th><th>status</th><th>decision</th><th>ms</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
        </main>
        </body>
        </html>

        """#

    /// The tab's icon (without one a browser asks for /favicon.ico, and logs the 404 as an error).
    static let icon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d2430"/><path d="M5 4h4a2.5 2.5 0 0 1 0 5H5zM5 9h4.5a2.5 2.5 0 0 1 0 5H5z" fill="none" stroke="#fff" stroke-width="1.6"/></svg>

        """#

    static let style = #"""
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2430; }
        header { display: flex; gap: 1.5em; align-items: baseline; padding: 0.6em 1.2em; background: #1d2430; color: #fff; }
        header h1 { font-size: 1.2em; margin: 0; }
        header .muted { color: #b8c0cc; }
        main { padding: 1em 1.2em; }
        .muted { color: #6b7482; }
        #sessions { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1em; }
        .session { background: #fff; border: 1px solid #d8dde5; border-radius: 6px; padding: 0.8em 1em; }
        .session h2 { font-size: 1.1em; margin: 0 0 0.4em; display: flex; gap: 0.6em; align-items: center; }
        .state { font-size: 0.8em; padding: 0.1em 0.6em; border-radius: 1em; background: #dde3ea; }
        .state.ready { background: #cdeccd; } .state.refreshing { background: #fbe7b5; }
        .state.failed, .state.rejected, .state.storm_guard, .state.logged_out, .state.no_token { background: #f6c9c9; }
        .failure { color: #a32020; margin: 0.2em 0; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.1em 1em; margin: 0.4em 0; }
        dt { color: #6b7482; } dd { margin: 0; font-variant-numeric: tabular-nums; }
        canvas { width: 100%; height: 160px; display: block; background: #fbfcfd; border: 1px solid #e4e8ee; }
        .legend { font-size: 0.85em; color: #6b7482; display: flex; gap: 1em; margin: 0.2em 0; }
        .legend .requests { color: #2a6fdb; } .legend .rejections { color: #d33; }
        .legend .parked { color: #b07d00; } .legend .refreshes { color: #188038; }
        .actions { display: flex; gap: 0.6em; align-items: center; margin-top: 0.5em; }
        button { font: inherit; padding: 0.25em 0.9em; border: 1px solid #9aa5b4; border-radius: 4px; background: #fff; cursor: pointer; }
        button:hover { background: #eef2f7; }
        table { border-collapse: collapse; width: 100%; background: #fff; font-size: 0.9em; }
        th, td { text-align: left; padding: 0.2em 0.6em; border-bottom: 1px solid #e4e8ee; }
        td { font-variant-numeric: tabular-nums; }
        tr.refused td { background: #fde2e2; color: #8a1010; }

        """#
}
