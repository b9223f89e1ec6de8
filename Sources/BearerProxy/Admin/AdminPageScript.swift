/// The admin page's script (`/app.js`): reads `/events` with `EventSource` and `/exchanges` with
/// `fetch`, draws each session's card and chart, and POSTs refresh and logout to the admin's own
/// endpoints (whose Origin check takes the page's own origin). It writes text only through
/// `textContent`: a path or a failure sentence can never become markup. `window.bearerPage` holds
/// what the chart draws, for the browser test to read.
enum AdminPageScript {
    static let source = #"""
        "use strict";
        const WINDOW_SECONDS = 300;
        const page = { snapshots: 0, sessions: {} };
        window.bearerPage = page;
        const cards = new Map();

        function element(tag, className, text) {
          const node = document.createElement(tag);
          if (className) node.className = className;
          if (text !== undefined) node.textContent = text;
          return node;
        }

        function seconds(value) {
          if (value === null || value === undefined) return "—";
          const whole = Math.max(0, Math.round(value));
          const minutes = Math.floor(whole / 60), rest = whole % 60;
          return minutes > 0 ? minutes + "m " + String(rest).padStart(2, "0") + "s" : rest + "s";
        }

        function card(name) {
          let entry = cards.get(name);
          if (entry) return entry;
          const root = element("article", "session");
          root.dataset.session = name;
          const title = element("h2");
          title.append(element("span", "name", name));
          const state = element("span", "state");
          title.append(state);
          const failure = element("p", "failure");
          const fields = element("dl");
          const values = {};
          for (const [key, label] of [["upstream", "upstream"], ["countdown", "token expires in"],
            ["generation", "generation"], ["store", "store"], ["last", "last refresh"],
            ["hour", "refreshes, last hour"], ["parked", "parked now"]]) {
            fields.append(element("dt", null, label));
            values[key] = element("dd", key);
            fields.append(values[key]);
          }
          const canvas = element("canvas");
          canvas.width = 640; canvas.height = 160;
          const legend = element("div", "legend");
          legend.append(element("span", "requests", "— requests/s"),
            element("span", "rejections", "— upstream 401s/s"),
            element("span", "parked", "— parked"),
            element("span", "refreshes", "▲ refresh"));
          const actions = element("div", "actions");
          const refresh = element("button", "refresh", "Refresh token");
          const logout = element("button", "logout", "Log out");
          const outcome = element("span", "outcome muted");
          refresh.addEventListener("click", () => act("refresh", name, outcome));
          logout.addEventListener("click", () => act("logout", name, outcome));
          actions.append(refresh, logout, outcome);
          root.append(title, failure, fields, canvas, legend, actions);
          document.getElementById("sessions").append(root);
          entry = { root, state, failure, values, canvas, expiresAt: null, lastRefreshAt: null, generation: null, points: [] };
          cards.set(name, entry);
          page.sessions[name] = entry.points;
          return entry;
        }

        async function act(action, name, outcome) {
          outcome.textContent = action + "…";
          try {
            const response = await fetch("/" + action + "?session=" + encodeURIComponent(name), { method: "POST" });
            const text = (await response.text()).trim();
            outcome.textContent = response.status + " " + text.slice(0, 200);
          } catch (error) {
            outcome.textContent = action + " failed: " + error;
          }
        }

        function show(snapshot) {
          page.snapshots += 1;
          const now = performance.now() / 1000;
          document.getElementById("totals").textContent =
            snapshot.requests_per_second + " requests/s · " + snapshot.upstream_401s_per_second + " upstream 401s/s · " +
            snapshot.parked_requests + " parked · " + snapshot.requests_total + " requests since start";
          for (const session of snapshot.sessions) {
            const entry = card(session.name);
            entry.state.textContent = session.state.replace("_", " ");
            entry.state.className = "state " + session.state;
            entry.failure.textContent = session.failure || "";
            entry.values.upstream.textContent = session.upstream;
            entry.values.generation.textContent = session.token_generation;
            entry.values.store.textContent = session.store;
            entry.values.hour.textContent = session.refreshes_last_hour;
            entry.values.parked.textContent = session.parked_requests;
            const last = session.last_refresh;
            entry.values.last.textContent = last
              ? last.outcome + " at " + last.at + (last.duration_s === null ? "" : " in " + Math.round(last.duration_s * 1000) + " ms")
              : "none yet";
            entry.expiresAt = session.token_expires_in_s === null ? null : now + session.token_expires_in_s;
            const refreshed = (entry.generation !== null && session.token_generation !== entry.generation) ||
              (entry.lastRefreshAt !== null && last && last.at !== entry.lastRefreshAt);
            entry.generation = session.token_generation;
            entry.lastRefreshAt = last ? last.at : null;
            entry.points.push({ at: now, requests: session.requests_per_second, rejections: session.upstream_401s_per_second,
              parked: session.parked_requests, refresh: refreshed });
            while (entry.points.length && entry.points[0].at < now - WINDOW_SECONDS) entry.points.shift();
            draw(entry, now);
          }
          tick();
        }

        function draw(entry, now) {
          const context = entry.canvas.getContext("2d");
          const width = entry.canvas.width, height = entry.canvas.height, pad = 14;
          context.clearRect(0, 0, width, height);
          // Requests per second on the left scale; 401s per second and parked requests, a storm's
          // few, on the right one, so that eight parked requests show beside thousands of requests.
          const peak = Math.max(1, ...entry.points.map(p => p.requests));
          const stormPeak = Math.max(1, ...entry.points.map(p => Math.max(p.rejections, p.parked)));
          const x = at => width - (now - at) / WINDOW_SECONDS * width;
          const y = (value, top) => height - pad - value / top * (height - 2 * pad);
          context.fillStyle = "#6b7482"; context.font = "11px sans-serif";
          context.fillText(String(Math.round(peak * 10) / 10) + " req/s", 4, pad);
          context.textAlign = "right";
          context.fillText(String(Math.round(stormPeak * 10) / 10) + " 401s/s · parked", width - 4, pad);
          context.textAlign = "left";
          context.fillText("5 min", 4, height - 2);
          for (const [key, color, top] of [["requests", "#2a6fdb", peak], ["rejections", "#d33", stormPeak],
            ["parked", "#b07d00", stormPeak]]) {
            context.strokeStyle = color; context.lineWidth = 1.5; context.beginPath();
            entry.points.forEach((point, index) => {
              const py = y(point[key], top);
              if (index === 0) context.moveTo(x(point.at), py); else context.lineTo(x(point.at), py);
            });
            context.stroke();
          }
          context.fillStyle = "#188038";
          for (const point of entry.points.filter(p => p.refresh)) {
            const px = x(point.at);
            context.fillRect(px - 0.5, pad, 1, height - 2 * pad);
            context.beginPath(); context.moveTo(px - 5, pad); context.lineTo(px + 5, pad); context.lineTo(px, pad + 8); context.fill();
          }
        }

        function tick() {
          const now = performance.now() / 1000;
          for (const entry of cards.values()) {
            entry.values.countdown.textContent = entry.expiresAt === null ? "no expiry known" : seconds(entry.expiresAt - now);
          }
        }

        async function exchanges() {
          try {
            const response = await fetch("/exchanges");
            const body = await response.json();
            const note = document.getElementById("exchanges-note");
            note.textContent = body.audit_log ? "The audit log's last " + body.exchanges.length + " lines, newest first; refused ones in red."
              : "The audit log is off (set audit_log to see the last 100 exchanges here).";
            const rows = body.exchanges.slice().reverse().map(line => {
              const row = element("tr", line.decision === "refused" ? "refused" : "");
              for (const value of [line.time, line.session, line.method, line.host, line.path, line.status,
                line.decision + (line.rule ? " (" + line.rule + ")" : ""), line.duration_ms]) {
                row.append(element("td", null, value === null || value === undefined ? "" : String(value)));
              }
              return row;
            });
            document.querySelector("#exchanges tbody").replaceChildren(...rows);
          } catch (error) {
            document.getElementById("exchanges-note").textContent = "Could not read /exchanges: " + error;
          }
        }

        const events = new EventSource("/events");
        events.onopen = () => { document.getElementById("connection").textContent = "live"; };
        events.onerror = () => { document.getElementById("connection").textContent = "disconnected, retrying…"; };
        events.onmessage = message => show(JSON.parse(message.data));
        setInterval(tick, 250);
        setInterval(exchanges, 2000);
        exchanges();

        """#
}
