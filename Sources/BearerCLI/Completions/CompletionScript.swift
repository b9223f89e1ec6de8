/// A shell's completion script for `bearer-proxy`, written from the proxy's table and its
/// subcommands' (`CommandSyntax`): the subcommands, each command's flags, and for a flag's value
/// what its kind offers (files, folders, the config's session names, a list of words; nothing for
/// an address or a URL). Nothing is listed by hand, so a new flag completes once it is in its table.
struct CompletionScript {
    enum Shell: String, CaseIterable {
        case bash, zsh, fish
    }

    /// The proxy's own table; its `subcommands` are the others.
    let root: CommandSyntax

    init(_ root: CommandSyntax) {
        self.root = root
    }

    func text(for shell: Shell) -> String {
        switch shell {
        case .bash: self.bash
        case .zsh: self.zsh
        case .fish: self.fish
        }
    }

    /// Every command: the proxy's (name `""`) first.
    var commands: [(name: String, syntax: CommandSyntax)] {
        [("", self.root)] + self.root.subcommands.map { ($0.name ?? "", $0) }
    }

    var subcommandNames: [String] { self.root.subcommands.compactMap(\.name) }

    /// The `[session NAME]` headers of the config file the shell variable `config` names: a `sed`
    /// every shell runs the same way (cheap: one small file, nothing started but sed).
    static let sessionNamesCommand =
        #"sed -n 's/^[[:space:]]*\[session[[:space:]]\{1,\}\([^]]*\)\].*/\1/p' "$config" 2>/dev/null"#

    /// Where the proxy looks for its config without `--config`, as a bash or zsh expression.
    static let defaultConfig = #"${XDG_CONFIG_HOME:-$HOME/.config}/bearer-proxy/proxy.conf"#

    /// The help's first line: what a shell shows beside a flag or a subcommand.
    static func summary(_ text: String) -> String {
        String(text.split(separator: "\n").first ?? "")
    }
}
