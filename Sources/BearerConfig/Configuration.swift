import BearerHTTP

/// What a config file and the flags over it make (docs/configuration.md, "Configuration"): the process's settings,
/// every session's, and where each was set. Pure values: loading writes no file and makes no live
/// object (keys, provers, certificates, stores are made by the start-up that needs them, from these
/// values: the proxy's start, `login`).
///
/// A key's value read or written on the whole configuration (`configuration.workers`,
/// `configuration.upstream`) is the process's for a process-wide key and the default session's for a
/// session key: what a file without sections sets, and what the demo and tests fill in.
@dynamicMemberLookup
package struct Configuration: Sendable {
    /// The process-wide keys, once.
    package var process = ProcessSettings()
    /// Every session: the default one (the keys outside any section) first, then the `[session
    /// NAME]` sections in file order (docs/sessions.md, "Several APIs in one proxy").
    package var sessions = [SessionSettings.defaultSession]
    /// Where each setting came from.
    package var provenance = Provenance()

    package init() {}

    /// The name of the session of the keys outside any section.
    package static let defaultSessionName = "default"

    /// The keys outside any section.
    package var defaultSession: SessionSettings {
        get { self.sessions[0] }
        set { self.sessions[0] = newValue }
    }

    /// The `[session NAME]` sections, in file order.
    package var namedSessions: ArraySlice<SessionSettings> { self.sessions.dropFirst() }

    package subscript<Value>(dynamicMember path: WritableKeyPath<ProcessSettings, Value>) -> Value {
        get { self.process[keyPath: path] }
        set { self.process[keyPath: path] = newValue }
    }

    package subscript<Value>(dynamicMember path: WritableKeyPath<SessionSettings, Value>) -> Value {
        get { self.sessions[0][keyPath: path] }
        set { self.sessions[0][keyPath: path] = newValue }
    }

    package subscript<Value>(dynamicMember path: KeyPath<SessionSettings, Value>) -> Value {
        self.sessions[0][keyPath: path]
    }

    /// The session called `name`.
    package func session(named name: String) -> SessionSettings? {
        self.sessions.first { $0.name == name }
    }

    /// Whether the keys outside any section make a session the user sees: one with an upstream (the
    /// main listener's paths no mount takes) or inject_hosts. A file without sections always has one
    /// (it needs an upstream); beside named sessions the default one may reach no API, and then it
    /// takes no request, and `/status`, `/metrics`, admin refresh and logout and the start line do
    /// not speak of it.
    package var hasDefaultSession: Bool {
        self.defaultSession.upstream != nil || self.defaultSession.injectHosts != nil
    }

    /// Every session's inject hosts: what the local CA's name constraints permit, and what
    /// NO_PROXY must not bypass.
    package var everyInjectHost: [HostPattern] {
        self.sessions.flatMap(\.effectiveInjectHosts)
    }

    /// Whether `io` was set: a fallback the user did not ask about is not a warning.
    package var ioIsExplicit: Bool {
        self.provenance.place(of: .io, in: Self.defaultSessionName) != nil
    }

    /// Where the rules about the session called `name` place their findings.
    package func places(of name: String) -> SettingPlaces {
        self.provenance.places(of: name)
    }
}

/// Where the per-request access log goes (and the audit log: the same three choices).
package enum AccessLogDestination: Equatable, Sendable, CustomStringConvertible {
    case off
    case standardError
    case file(String)

    /// `off`, `stderr` or a path (`~` expanded); nil for an empty value.
    init?(parsing value: String) {
        switch value {
        case "off": self = .off
        case "stderr": self = .standardError
        case "": return nil
        default: self = .file(ValueParsers.expandingHome(value))
        }
    }

    package var description: String {
        switch self {
        case .off: "off"
        case .standardError: "stderr"
        case .file(let path): path
        }
    }
}

/// The OAuth2 grants (RFC 6749 §6, §4.4, §4.3; RFC 7523 §2.1).
package enum GrantType: String, Equatable, Sendable {
    case refreshToken = "refresh_token"
    case clientCredentials = "client_credentials"
    case password
    /// A JWT the proxy signs is the grant (RFC 7523 §2.1): service accounts.
    case jwtBearer = "jwt_bearer"

    /// The `grant_type` form value.
    package var formValue: String {
        self == .jwtBearer ? "urn:ietf:params:oauth:grant-type:jwt-bearer" : self.rawValue
    }
}

/// How the client authenticates to the token endpoint (RFC 6749 §2.3.1, RFC 7523 §2.2, RFC 8705 §2).
package enum ClientAuthentication: String, Equatable, Sendable {
    /// HTTP Basic with the form-encoded client id and secret (client_secret_basic).
    case basic
    /// client_id and client_secret as form fields (client_secret_post).
    case post
    /// A JWT signed with client_key_file (RFC 7523 §2.2, OIDC Core §9).
    case privateKeyJWT = "private_key_jwt"
    /// The TLS client certificate authenticates; only client_id is sent (RFC 8705 §2).
    case tlsClientAuth = "tls_client_auth"
}

package enum OtherHostsPolicy: String, Equatable, Sendable {
    /// Forward absolute-form requests to other hosts, without the token.
    case forward
    /// Answer them 403.
    case deny
}
