extension KeyGroup {
    /// What a session's token may be used for, and the record of what it was used for.
    static let rules = KeyGroup(
        title: "What the token may be used for",
        introduction: """
            A program given the proxy instead of the token can still use the token for anything the API \
            allows. `allow` and `deny` narrow that to the requests it needs; see docs/untrusted-programs.md.
            """,
        keys: [
            KeyDocumentation(
                .allow,
                "METHOD PATH patterns; comma-separated",
                default: "none (every request is allowed)",
                example: "GET /v1/*, POST /v1/items",
                """
                With it set, a request to the session (its upstream, mount, listener or inject_hosts) that no \
                pattern matches is refused with 403 and a line naming the session and the rule, before any \
                token is added or any byte goes upstream; through every way in (base URL, forward proxy, \
                intercepted tunnels, WebSocket upgrades). METHOD is a method (case-sensitive) or `*`; in PATH \
                `*` is one segment and `**` any number. The path is compared without its query, after \
                percent-decoding of unreserved characters and removal of `.`, `..` and empty segments, so \
                `/v1/../admin` is `/admin`; a segment with an encoded slash (`%2F`) matches no wildcard.
                """
            ),
            KeyDocumentation(
                .deny,
                "METHOD PATH patterns; comma-separated",
                example: "DELETE /v1/**",
                """
                Requests refused with 403 even when `allow` lets them through (or when `allow` is not set). \
                The same patterns as `allow`.
                """
            ),
            KeyDocumentation(
                .auditLog,
                "off, stderr, or a file path",
                example: "/var/log/bearer-proxy/audit.jsonl",
                """
                One JSON object per line per request, whatever `log_level` says: time, session, client (its \
                address, or a unix socket peer's pid and uid), method, scheme, host, path (query values \
                replaced by `…`), protocol, status, bytes in and out, duration, the token's generation (never \
                the token), whether it waited for a refresh and was replayed, and the rules' decision. A file \
                is appended to, created 0600, and opened again on SIGUSR1 (logrotate's `postrotate`); one that \
                cannot be opened or written is one warning, and its lines are dropped and counted \
                (`bearer_proxy_audit_lines_dropped_total`). `bearer-proxy audit FILE` sums one up. Process-wide; \
                a change takes a restart.
                """
            ),
        ]
    )
}
