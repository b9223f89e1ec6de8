extension CommandSyntax {
    /// The proxy's table, its subcommands' under it: what bearer-proxy(1) is made from.
    package static var bearerProxy: CommandSyntax { ProxyCommand.syntax }
}
