import BearerConfig

/// proxy.conf.example: the smallest working configuration switched on, every other key commented out
/// at its default (or at an example value, its default named), each with its paragraph.
enum ExampleConfiguration {
    static let header = """
        # bearer-proxy configuration, generated from the key table by `swift run bearer-docs` (the reference:
        # docs/configuration.md, bearer-proxy.conf(5)). The two settings below are a working proxy on their own:
        #     cp proxy.conf.example proxy.conf          # then put your API's URL in upstream
        #     export API_TOKEN=…                        # the token to send (kept out of the file and argv)
        #     bearer-proxy --config proxy.conf --check  # validate, print the effective settings
        #     bearer-proxy --config proxy.conf          # clients use http://127.0.0.1:8080
        # Every other key is below, commented out: uncomment what you need (the sections "Getting new
        # tokens" and "JSON app backends" replace the static token with refreshed ones).
        #
        # Format: `key = value` lines; `#` starts a comment line; `${VAR}` is replaced by the environment
        # variable VAR (an unset variable is an error). Durations: 500ms, 30s, 5m, 1h. Sizes: 512B, 64KiB,
        # 1MiB. Flags (--listen, --upstream, --admin-listen, --log-level) override the file.
        """

    static func render() -> String {
        var lines = Self.header.split(separator: "\n").map(String.init)
        for (index, group) in Configuration.keyGroups.enumerated() {
            let isSet = index == 0
            if !isSet {
                lines += ["", "# ---- \(group.title) ----"]
                if !group.introduction.isEmpty { lines += wrapped(group.introduction, width: 100, prefix: "# ") }
                if !group.sample.isEmpty {
                    lines += ["#"]
                    lines += group.sample.split(separator: "\n", omittingEmptySubsequences: false).map {
                        $0.isEmpty ? "#" : "#     " + $0
                    }
                    lines += ["#"]
                }
                if !group.sampleOutcome.isEmpty { lines += wrapped(group.sampleOutcome, width: 100, prefix: "# ") }
            }
            for key in group.keys {
                let value = key.example ?? key.key.defaultValue ?? ""
                lines += [""]
                lines += wrapped(key.paragraph + " Default: \(key.defaultDescription).", width: 100, prefix: "# ")
                lines += [(isSet ? "" : "# ") + "\(key.key.name) = \(value)"]
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
