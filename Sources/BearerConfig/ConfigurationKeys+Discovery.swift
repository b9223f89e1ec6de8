import BearerHTTP

extension ConfigurationKey {
    /// `issuer`: only recorded here. Loading makes no network call; the metadata is read at start, at
    /// `--check` and on SIGHUP (`AuthorizationServerDiscovery`).
    package static let issuer = valueKey("issuer", \SessionSettings.issuer, show: { $0?.text }) { value in
        Issuer.parse(value).map { $0 }.mapError { error in
            Expected("'\(HTTPURL.quotable(value))' \(error.reason) (expected e.g. https://auth.example.com)")
        }
    }
}
