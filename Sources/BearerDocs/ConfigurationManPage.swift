import BearerConfig

/// bearer-proxy.conf(5): the file's format and every key, from the same table as the reference.
enum ConfigurationManPage {
    static func render() -> String {
        var lines = Roff.header(
            name: "bearer-proxy.conf",
            section: 5,
            title: "File Formats",
            summary: "configuration file of bearer-proxy"
        )
        lines += [
            ".SH SYNOPSIS",
            Roff.text("$XDG_CONFIG_HOME/bearer-proxy/proxy.conf, else ~/.config/bearer-proxy/proxy.conf"),
            ".SH DESCRIPTION",
            Roff.paragraph(
                """
                bearer-proxy reads its settings from the file given with `--config`, else from the default file \
                above when it exists (not with `--demo`). The file holds `key = value` lines and comment lines \
                starting with `#` (a `#` after a value is refused rather than silently becoming part of it; quote \
                the value if it belongs there). `${VAR}` is replaced by the environment variable VAR (an unset \
                variable is an error): keep tokens out of files and argv. Durations are written 500ms, 30s, 5m, \
                1h; sizes 512B, 64KiB, 1MiB. An unknown key (with a "did you mean"), a key given twice or a bad \
                value is an error naming file:line; every error of the file is reported in one run. Flags \
                override the file's settings.
                """
            ),
            ".PP",
            Roff.paragraph(
                """
                A line `[session NAME]` starts the keys of another API (a named session); they run to the next \
                such line. Session keys outside any section are the default session's; process-wide keys are \
                set outside any section only. `bearer-proxy --check` validates the file and prints the \
                effective configuration with secrets masked, then its warnings. SIGHUP re-reads the file.
                """
            ),
        ]
        for group in Configuration.keyGroups {
            lines += [".SH \"\(Roff.text(group.title.uppercased()))\""]
            if !group.introduction.isEmpty { lines += [Roff.paragraph(group.introduction)] }
            if !group.sample.isEmpty { lines += Roff.example(group.sample) }
            if !group.sampleOutcome.isEmpty { lines += [".PP", Roff.paragraph(group.sampleOutcome)] }
            for key in group.keys {
                lines += [
                    ".TP",
                    "\\fB\(Roff.text(key.key.name))\\fR = \\fI\(Roff.text(key.value))\\fR",
                    Roff.paragraph(key.paragraph),
                    ".br",
                    Roff.text("Default: \(key.defaultDescription). Set \(key.key.placement)."),
                ]
            }
        }
        lines += [
            ".SH FILES",
            ".TP",
            Roff.text("$XDG_CONFIG_HOME/bearer-proxy/proxy.conf, ~/.config/bearer-proxy/proxy.conf"),
            "The default configuration file.",
            ".TP",
            Roff.text("/usr/share/doc/bearer-proxy/proxy.conf.example"),
            "Every key, commented out, with the smallest working configuration switched on.",
            ".SH SEE ALSO",
            "\\fBbearer\\-proxy\\fR(1)",
            ".PP",
            "The guides these pages name (docs/NAME.md) are in /usr/share/doc/bearer\\-proxy/docs where the package is installed, and in docs/ of the source.",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}
