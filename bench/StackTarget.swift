import BearerConfig
import Foundation

/// What a run against your own stack aims at: the session, its upstream (where the load ends up) and
/// its token endpoint (what each storm calls), from your config before anything starts, or from the
/// running proxy's `/status` (`--proxy`). The bench prints it, and sends nothing to an upstream that
/// is not loopback without `--yes`.
struct StackTarget: Equatable {
    var session: String
    var upstream: String
    var tokenEndpoint: String
    /// The request target through the proxy: the session's mount, then `--path`.
    var path: String

    /// The session `name` (nil: the default one) of the config at `path`, read as the proxy reads it
    /// (its secrets left unread: nothing is sent with this configuration).
    static func fromConfig(_ path: String, session name: String?, requestPath: String) throws -> StackTarget {
        let configuration: Configuration
        do throws(ConfigurationErrors) {
            configuration = try ConfigurationLoader.load(
                ConfigurationSource(configPath: path, takesProxyFlags: false),
                secrets: .unused
            )
        } catch {
            throw BenchError("\(path): \(error)")
        }
        let settings: SessionSettings
        if let name {
            guard let named = configuration.session(named: name) else {
                let names = configuration.sessions.map(\.name).joined(separator: ", ")
                throw BenchError("\(path) has no session '\(name)' (its sessions: \(names))")
            }
            settings = named
        } else {
            guard configuration.hasDefaultSession else {
                let names = configuration.namedSessions.map(\.name).joined(separator: ", ")
                throw BenchError("\(path) has no default session; name one with --session (its sessions: \(names))")
            }
            settings = configuration.defaultSession
        }
        guard let upstream = settings.upstream else {
            throw BenchError("session \(settings.name) has no upstream: bearer-bench loads a session's upstream")
        }
        let endpoint =
            settings.tokenURL?.description
            ?? settings.issuer.map { "the token endpoint \($0) publishes (issuer)" }
            ?? (settings.tokenCommand == nil ? "none" : "token_command")
        return StackTarget(
            session: settings.name,
            upstream: upstream.description,
            tokenEndpoint: endpoint,
            path: (settings.mount ?? "") + requestPath
        )
    }

    /// The same from a running proxy's `/status`.
    static func fromStatus(
        _ status: StackAdmin.SessionStatus,
        session name: String?,
        requestPath: String
    ) throws
        -> StackTarget
    {
        guard !status.upstream.isEmpty else {
            throw BenchError("the session has no upstream: bearer-bench loads a session's upstream")
        }
        return StackTarget(
            session: status.metricsName ?? name ?? "default",
            upstream: status.upstream,
            tokenEndpoint: status.tokenEndpoint ?? "none",
            path: status.mount + requestPath
        )
    }

    /// Whether the upstream is this machine: only then may the bench send without `--yes`.
    var isLoopback: Bool { isLoopbackHost(URL(string: self.upstream)?.host ?? "") }

    /// What the run will do, printed before anything is sent.
    func plan(options: BenchOptions, rate: Double?, through proxy: String) -> String {
        let storms = 60 / options.refreshEvery.seconds
        let rateText = rate.map { "\(Int($0)) requests/s" } ?? "as fast as the answers come (closed loop)"
        let stormsText = storms == storms.rounded() ? "\(Int(storms))" : String(format: "%.1f", storms)
        return """
            bearer-bench will load your stack:
              target          \(options.method) \(self.upstream.hasSuffix("/") ? String(self.upstream.dropLast()) : self.upstream)\(options.path ?? "") (session \(self.session), through \(proxy))
              connections     \(options.connections), rate \(rateText)
              phases          \(formatSeconds(options.duration)) steady, then \(formatSeconds(options.duration)) with storms
              storms          every \(formatSeconds(options.refreshEvery)) (\(stormsText) a minute): POST /refresh?park=1, each
                              one token call while every request waits for it
              token endpoint  \(self.tokenEndpoint)

            """
    }
}

/// 127.0.0.0/8, ::1 and localhost.
func isLoopbackHost(_ host: String) -> Bool {
    let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
    let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
    let isIPv4Loopback = octets.count == 4 && octets.first == "127" && octets.allSatisfy { UInt8($0) != nil }
    return bare == "localhost" || bare == "::1" || isIPv4Loopback
}
