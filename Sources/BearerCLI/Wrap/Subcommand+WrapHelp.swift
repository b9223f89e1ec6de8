extension Subcommand {
    static let envHelp = """
        OVERVIEW: Print export lines that point HTTP clients at the configured proxy, for a proxy that
        runs as a service: eval "$(bearer-proxy env)". http_proxy, https_proxy, HTTP_PROXY and
        HTTPS_PROXY name the proxy; NO_PROXY and no_proxy list localhost, 127.0.0.1 and ::1, less any
        an inject host names; with tls_intercept on, SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE
        and GIT_SSL_CAINFO name bundle.pem (made when missing) and NODE_EXTRA_CA_CERTS ca.pem;
        BEARER_PROXY_URL is the proxy's base URL. Never a token.

        USAGE: bearer-proxy env [--config <file>] [--listen <addr>]

        OPTIONS:
          --config <file>         The proxy's config file: listen, inject_hosts, tls_intercept, ca_dir.
          --listen <addr>         The address the proxy was started with, when not the config's:
                                  HOST:PORT or [IPv6]:PORT (a unix socket cannot be an http_proxy).
          -h, --help              Show help information.

        """

    static let runHelp = """
        OVERVIEW: Run a program behind the proxy: start the config's proxy in this process, run the
        program with the environment of 'bearer-proxy env' for it, and stop the proxy when the program
        exits. The token stays in the proxy; the program gets only addresses and files to trust.

        USAGE: bearer-proxy run [--config <file>] [<options>] -- <command> [<argument> ...]

        OPTIONS:
          --config <file>         The proxy's config file (the config's listen and admin_listen are
                                  not used: they belong to the proxy the file runs as a service).
          --listen <addr>         Where the proxy listens: HOST:PORT or [IPv6]:PORT
                                  (default: a free port on 127.0.0.1)
          --admin-listen <addr>   Serve the admin endpoints there (default: off)
          --no-intercept          Leave tls_intercept off (default: on, so https:// requests to the
                                  inject hosts get the token; the program trusts the local CA).
          --log-level <level>     error, warn, info or debug (default: warn: the program's output is
                                  what you read).
          -h, --help              Show help information.

        The program runs without a shell (found on PATH) on this terminal, standard input, output and
        error, with BEARER_PROXY_URL (http://127.0.0.1:<port>, the API's base URL through the proxy)
        added. The exit status is the program's, or 128 + N when signal N ended it; 127 when it is not
        found. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to run are passed on to it;
        a Ctrl-C at the terminal reaches it once. A bad config or a taken port: exit 1, the program is
        not started. Environment variables that the config expands (${VAR}) into a secret
        (access_token, refresh_token, client_secret, password, session_store, token_body, login_body)
        are removed from the program's environment: it has no use for them, and there they would
        leak into crash dumps and 'ps e'.

        """
}
