import BearerHTTP

extension ConfigurationKey {
    /// `issuer`: only recorded here. Loading makes no network call; the metadata is read at start, at
    /// `--check` and on SIGHUP (`AuthorizationServerDiscovery`).
    package static let issuer = valueKey("issuer", \SessionSettings.issuer, show: { $0?.text }) { value in
        Issuer.parse(value).map { $0 }.mapError { error in
            Expected("'\(HTTPURL.quotable(value))' \(error.reason) (expected e.g. https://auth.example.com)")
        }
    }

    /// `resource_url`: only recorded here, like `issuer`; its metadata (RFC 9728) is read with the
    /// issuer's. The same rules as an issuer: https:// (or loopback http://), kept as written.
    package static let resourceURL = valueKey("resource_url", \SessionSettings.resourceURL, show: { $0?.text }) {
        value in
        Issuer.parse(value).map { $0 }.mapError { error in
            Expected("'\(HTTPURL.quotable(value))' \(error.reason) (expected e.g. https://api.example.com/v2)")
        }
    }
}
