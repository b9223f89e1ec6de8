import BearerCLI

/// bearer-proxy(1): the commands and their flags from the commands' tables (`CommandSyntax`), then
/// what no table holds: signals, exit statuses, files and environment.
enum CommandManPage {
    static func render(_ proxy: CommandSyntax = .bearerProxy) -> String {
        var lines = Roff.header(
            name: "bearer-proxy",
            section: 1,
            title: "User Commands",
            summary: "a local authenticating HTTP proxy"
        )
        lines += [".SH SYNOPSIS", ".nf"]
        for command in [proxy] + proxy.subcommands {
            for usage in command.usage {
                let name = Roff.text("bearer-proxy" + (command.name.map { " " + $0 } ?? ""))
                lines += ["\\fB\(name)\\fR \(Roff.text(usage))"]
            }
        }
        lines += [".fi", ".SH DESCRIPTION", Roff.paragraph(proxy.overview)]
        if let discussion = proxy.discussion { lines += [".PP", Roff.paragraph(discussion)] }
        lines += [".SH OPTIONS"] + Self.flags(proxy.flags)
        lines += [".SH COMMANDS"]
        for command in proxy.subcommands {
            let name = command.name ?? ""
            lines += [
                ".SS \"\(Roff.text("bearer-proxy \(name)"))\"",
                "\\fB\(Roff.text("bearer-proxy \(name)"))\\fR \(Roff.text(command.usage[0]))",
                ".PP",
                Roff.paragraph(command.overview),
            ]
            if let discussion = command.discussion { lines += [".PP", Roff.paragraph(discussion)] }
            lines += Self.flags(command.flags)
        }
        for (title, paragraphs) in Self.sections {
            lines += [".SH \(title)"]
            for (index, paragraph) in paragraphs.enumerated() {
                if let tag = paragraph.tag {
                    lines += [".TP", Roff.text(tag), Roff.paragraph(paragraph.text)]
                } else {
                    lines += (index == 0 ? [] : [".PP"]) + [Roff.paragraph(paragraph.text)]
                }
            }
        }
        lines += [
            ".SH SEE ALSO", "\\fBbearer\\-proxy.conf\\fR(5)", ".PP",
            "The guides these pages name (docs/NAME.md) are in /usr/share/doc/bearer\\-proxy/docs where the package is installed, and in docs/ of the source.",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Each flag as a tagged paragraph: `-h, --help`, `--config file`, its help and its default.
    static func flags(_ flags: [Flag]) -> [String] {
        flags.flatMap { flag -> [String] in
            var label = flag.shortName.map { "\\fB\(Roff.text($0))\\fR, " } ?? ""
            label += "\\fB\(Roff.text(flag.name))\\fR"
            if let value = flag.value {
                label += value.isOptional ? " [\\fI\(Roff.text(value.name))\\fR]" : " \\fI\(Roff.text(value.name))\\fR"
            }
            var help = flag.help
            if let defaultValue = flag.defaultValue { help += " (default: \(defaultValue.text))" }
            return [".TP", label, Roff.paragraph(help)]
        }
    }

    /// A paragraph of a hand-written section; tagged ones are a list's items.
    struct Paragraph {
        var tag: String?
        var text: String
        init(_ tag: String? = nil, _ text: String) {
            self.tag = tag
            self.text = text
        }
    }

    /// What no table holds, from docs/operations.md and docs/wrapping.md.
    static let sections: [(String, [Paragraph])] = [
        (
            "SIGNALS",
            [
                Paragraph(
                    "SIGTERM, SIGINT",
                    """
                    Close the listening sockets (a new connection is refused at once; a unix socket's file is \
                    removed), finish in-flight requests for at most shutdown_timeout (10s), exit 0. A second \
                    signal exits at once (status 1); a signal while the proxy is still starting stops it at \
                    once, with status 0.
                    """
                ),
                Paragraph(
                    "SIGHUP",
                    """
                    Re-read the config file: everything that can change without dropping a connection (the \
                    token sources and their secrets, scope, audience, resource, refresh_skew, max_refreshes, \
                    refresh_window, revocation_url, the login keys, log_level, access_log) is applied at once \
                    and every session that can refresh does; a change to a key bound at start is named in one \
                    warning and waits for a restart; a file with a mistake changes nothing. Without a config \
                    file, or with one from a pipe, SIGHUP only refreshes the sessions.
                    """
                ),
                Paragraph(
                    "SIGUSR1",
                    """
                    Open the audit_log file again by its path, after logrotate moved it (its postrotate \
                    script); lines already gathered go to the old file, later ones to the new.
                    """
                ),
                Paragraph(
                    "run",
                    """
                    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to bearer-proxy run are passed on \
                    to its program (a terminal's keys reach it once, from the terminal); run drains and stops \
                    once the program has exited.
                    """
                ),
            ]
        ),
        (
            "EXIT STATUS",
            [
                Paragraph(
                    "0",
                    "The proxy stopped after SIGTERM or SIGINT; --check found no error; a subcommand succeeded."
                ),
                Paragraph(
                    "1",
                    """
                    A configuration or command-line error (one line each on stderr), a proxy that could not \
                    start, a second stop signal, or a failed subcommand.
                    """
                ),
                Paragraph(
                    "run",
                    """
                    The program's status; 128 + N when signal N ended it; 127 when it is not found, 126 when it \
                    cannot be run; 1 when the proxy cannot start (the program is not started).
                    """
                ),
            ]
        ),
        (
            "FILES",
            [
                Paragraph(
                    "$XDG_CONFIG_HOME/bearer-proxy/proxy.conf, ~/.config/bearer-proxy/proxy.conf",
                    "The configuration file read without --config, when it exists; see bearer-proxy.conf(5)."
                ),
                Paragraph(
                    "$XDG_DATA_HOME/bearer-proxy/ca/, ~/.local/share/bearer-proxy/ca/",
                    """
                    The local CA of tls_intercept (ca_dir): ca.pem, intermediate.pem, intermediate-key.pem, \
                    bundle.pem.
                    """
                ),
                Paragraph(
                    "$XDG_DATA_HOME/bearer-proxy/dpop-key.pem, ~/.local/share/bearer-proxy/dpop-key.pem",
                    "The DPoP proof key (dpop_key_file)."
                ),
                Paragraph(
                    "refresh_token_file, refresh_token_file.lock",
                    """
                    The stored refresh token (mode 0600) and the empty file every process sharing it locks \
                    across a refresh.
                    """
                ),
            ]
        ),
        (
            "ENVIRONMENT",
            [
                Paragraph(
                    "XDG_CONFIG_HOME, XDG_DATA_HOME, HOME",
                    "Where the default configuration file, the local CA and the DPoP key are looked for."
                ),
                Paragraph(
                    "${VAR} in the configuration",
                    """
                    Any variable the config file names is read from the environment (SIGHUP reads it again); \
                    keep secrets there, not in the file.
                    """
                ),
                Paragraph(
                    "SSL_CERT_FILE",
                    "Where bearer-proxy ca --bundle reads the system's CA certificates, unless it names bundle.pem."
                ),
                Paragraph(
                    "Set by run and printed by env",
                    """
                    http_proxy, https_proxy, HTTP_PROXY, HTTPS_PROXY, NO_PROXY, no_proxy, SSL_CERT_FILE, \
                    REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, NODE_EXTRA_CA_CERTS, BEARER_PROXY_URL \
                    and BEARER_PROXY_URL_<NAME>.
                    """
                ),
            ]
        ),
    ]
}
