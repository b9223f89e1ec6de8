import BearerConfig
import BearerCore
import BearerHTTP
import BearerIO

/// Reads each session's `issuer` metadata and fills the endpoint keys its file left unset. I/O of the
/// start, `--check` and SIGHUP (loading the configuration stays free of network calls).
package enum AuthorizationServerDiscovery {
    /// The largest metadata document read: real ones are a few KiB.
    package static let maximumDocumentBytes = 256 * 1024
    /// Same-origin redirects followed at most; one to another origin is never followed.
    static let maximumRedirects = 3

    /// `configuration` with every session that has an `issuer` (or only the one called `only`) filled
    /// from its metadata. Each session's requests leave through `connector(index)`, on a loop of
    /// their own that is gone when this returns. Blocks: never call it on an event loop.
    package static func fill(
        _ configuration: Configuration,
        only: String? = nil,
        connector: (Int) -> OutboundConnector
    ) throws(DiscoveryError) -> Configuration {
        let discovers = { (session: SessionSettings) in
            (session.issuer != nil || session.resourceURL != nil) && (only ?? session.name) == session.name
        }
        guard configuration.sessions.contains(where: discovers) else { return configuration }
        let group = EventLoopGroup(count: 1, name: "bearer-discovery")
        defer { group.shutdown() }
        var filled = configuration
        for (index, session) in configuration.sessions.enumerated() {
            guard discovers(session) else { continue }
            let places = configuration.places(of: session.name)
            let caller = EndpointCaller(
                timeout: configuration.process.refreshTimeout,
                dpop: nil,
                loop: group.loops[0],
                connector: connector(index)
            )
            if let resource = session.resourceURL {
                let place = "\(places[.resourceURL] ?? places.whole): \(ConfigurationKey.resourceURL)"
                try Self.applyResource(resource, to: &filled.sessions[index], caller: caller, place: place)
            }
            guard let issuer = filled.sessions[index].issuer else { continue }
            let place = "\(places[.issuer] ?? places[.resourceURL] ?? places.whole): \(ConfigurationKey.issuer)"
            let (metadata, source) = try Self.fetch(issuer, caller: caller, place: place)
            try Self.apply(metadata, from: source, to: &filled.sessions[index], places: places, place: place)
        }
        return filled
    }

    /// `fill` through the kernel's network with each session's endpoint TLS (ca_file, without a client
    /// certificate: metadata is public): for `--check`, SIGHUP, `login` and `logout`, which have no
    /// proxy's connectors.
    package static func fill(
        _ configuration: Configuration,
        only: String? = nil
    ) throws(DiscoveryError) -> Configuration {
        let process = configuration.process
        var connectors: [OutboundConnector] = []
        for session in configuration.sessions {
            do throws(TLSConfigurationError) {
                let tls = try process.outboundTLS(for: session, presenting: nil)
                connectors.append(OutboundConnector(tls: tls, connectTimeout: process.upstreamConnectTimeout))
            } catch {
                throw DiscoveryError(description: error.description)
            }
        }
        return try Self.fill(configuration, only: only) { connectors[$0] }
    }

    /// The first well-known address that answers 200 with a document, and that document checked.
    static func fetch(
        _ issuer: Issuer,
        caller: EndpointCaller,
        place: String
    ) throws(DiscoveryError) -> (AuthorizationServerMetadata, String) {
        let (body, source) = try Self.firstDocument(
            at: MetadataAddresses.urls(for: issuer),
            caller: caller,
            what: "authorization server metadata",
            place: place
        )
        switch AuthorizationServerMetadata.parse(body, issuer: issuer) {
        case .success(let metadata):
            return (metadata, source)
        case .failure(.issuerMismatch(let named)):
            throw .issuerMismatch(issuer, named: named, source: source, at: place)
        case .failure(.unusable(let reason)):
            throw .unusable(reason, source: source, at: place)
        }
    }

    /// The body of the first of `urls` that answers 200, and where it came from; else an error naming
    /// each URL and what it answered.
    static func firstDocument(
        at urls: [HTTPURL],
        caller: EndpointCaller,
        what: String,
        place: String
    ) throws(DiscoveryError) -> ([UInt8], String) {
        var tried: [(url: String, outcome: String)] = []
        for url in urls {
            let (answer, source) = Self.get(url, caller: caller)
            switch answer {
            case .response(let response) where response.status == 200:
                return (response.body, source)
            case .response(let response):
                tried.append((url.description, "\(response.status)"))
            case .failed(let reason):
                tried.append((url.description, reason))
            }
        }
        throw .noMetadata(what, at: place, tried: tried)
    }

    /// What a GET came back with: a response, or why none.
    private enum Answer {
        case response(EndpointResponse)
        case failed(String)
    }

    /// GET `url`, following a redirect only within its origin; the answer (or why none) and the URL
    /// it came from.
    private static func get(_ url: HTTPURL, caller: EndpointCaller) -> (Answer, String) {
        var current = url
        for _ in 0...Self.maximumRedirects {
            let request = EndpointRequest(
                url: current,
                contentType: "",
                body: [],
                method: "GET",
                maximumResponseBytes: Self.maximumDocumentBytes
            )
            let response: EndpointResponse
            switch caller.sendAndWait(request) {
            case .success(let answer): response = answer
            case .failure(.responseTooLarge):
                return (.failed("larger than \(Self.maximumDocumentBytes / 1024) KiB"), current.description)
            case .failure(let error): return (.failed(error.reason), current.description)
            }
            guard (300..<400).contains(response.status), let location = response.header("location") else {
                return (.response(response), current.description)
            }
            guard let next = Self.sameOrigin(location, as: current) else {
                return (
                    .failed("\(response.status) to \(HTTPURL.quotable(location)), another origin: not followed"),
                    current.description
                )
            }
            current = next
        }
        return (.failed("more than \(Self.maximumRedirects) redirects"), current.description)
    }

    /// `location` (absolute, or a path) when it stays on `base`'s origin.
    private static func sameOrigin(_ location: String, as base: HTTPURL) -> HTTPURL? {
        if location.hasPrefix("/") && !location.hasPrefix("//") {
            var next = base
            next.pathPrefix = location
            return location.contains("?") || location.contains("#") ? nil : next
        }
        guard case .success(let next) = HTTPURL.parse(location), next.origin == base.origin else { return nil }
        return next
    }

    /// Fills what the file left unset, and chooses the grant and client authentication among what
    /// the server offers when the file does not say (docs/token-sources.md, "Discovery").
    static func apply(
        _ metadata: AuthorizationServerMetadata,
        from source: String,
        to session: inout SessionSettings,
        places: SettingPlaces,
        place: String
    ) throws(DiscoveryError) {
        var keys: Set<String> = []
        var origins = session.discovered?.origins ?? [:]
        func fill(_ path: WritableKeyPath<SessionSettings, HTTPURL?>, _ key: ConfigurationKey, _ value: HTTPURL?) {
            guard session[keyPath: path] == nil, let value else { return }
            session[keyPath: path] = value
            keys.insert(key.name)
        }
        if session.tokenCommand == nil && session.tokenFormat == .form {
            fill(\.tokenURL, .tokenURL, metadata.tokenEndpoint)
        }
        fill(\.login.authorizationURL, .authorizationURL, metadata.authorizationEndpoint)
        fill(\.login.deviceAuthorizationURL, .deviceAuthorizationURL, metadata.deviceAuthorizationEndpoint)
        fill(\.revocationURL, .revocationURL, metadata.revocationEndpoint)
        session.registrationURL = session.registrationURL ?? metadata.registrationEndpoint
        // A client a login registered (RFC 7591) and kept beside the refresh token.
        if session.clientID == nil, let file = session.refreshTokenFile, let endpoint = session.registrationURL,
            let registered = RegisteredClient.stored(besides: file, for: endpoint.description)
        {
            session.clientID = registered.clientID
            origins[ConfigurationKey.clientID.name] =
                "registered at \(endpoint) by login, kept in \(RegisteredClient.path(besides: file))"
        }
        if places[.grantType] == nil, let offered = metadata.grantTypes {
            let grant = session.effectiveGrantType.formValue
            guard offered.contains(grant) else {
                throw .unsupported(
                    "the server does not offer the \(grant) grant (it offers \(offered.joined(separator: ", "))): set \(ConfigurationKey.grantType)",
                    at: place
                )
            }
        }
        if places[.clientAuth] == nil, let chosen = Self.clientAuthentication(for: session, offered: metadata) {
            session.clientAuthentication = chosen
            keys.insert(ConfigurationKey.clientAuth.name)
        }
        session.discovered = DiscoveredKeys(source: source, keys: keys, origins: origins)
    }

    /// With a client secret and no key or certificate to authenticate with: client_secret_basic when
    /// the server offers it (or says nothing, which means it, RFC 8414 §2), else client_secret_post
    /// when offered. Nil: leave the default.
    static func clientAuthentication(
        for session: SessionSettings,
        offered metadata: AuthorizationServerMetadata
    ) -> ClientAuthentication? {
        guard session.clientSecret != nil, session.credentials.keyFile == nil,
            session.credentials.tlsCertificateFile == nil, let offered = metadata.tokenEndpointAuthMethods
        else { return nil }
        if offered.contains("client_secret_basic") { return .basic }
        if offered.contains("client_secret_post") { return .post }
        return nil
    }
}
