import BearerConfig
import BearerCore
import BearerHTTP
import FoundationEssentials

/// The parts of an authorization server's metadata (RFC 8414 §2, OpenID Connect Discovery §3) the
/// proxy uses, read from the document and checked: its `issuer` equals the configured one, and every
/// endpoint is an `https://` URL (`http://` only on a loopback address), since a token or a client
/// secret is sent there.
package struct AuthorizationServerMetadata: Equatable, Sendable {
    package var tokenEndpoint: HTTPURL
    package var authorizationEndpoint: HTTPURL?
    package var deviceAuthorizationEndpoint: HTTPURL?
    package var revocationEndpoint: HTTPURL?
    package var registrationEndpoint: HTTPURL?
    /// `grant_types_supported`; nil when the document does not say.
    package var grantTypes: [String]?
    /// `token_endpoint_auth_methods_supported`; nil when the document does not say (RFC 8414:
    /// client_secret_basic then).
    package var tokenEndpointAuthMethods: [String]?
    /// `code_challenge_methods_supported`; nil when the document does not say.
    package var codeChallengeMethods: [String]?

    /// Why a document cannot be used.
    package enum Problem: Error, Equatable, Sendable {
        /// Its `issuer` is not the configured one (the value it has, or nil without one).
        case issuerMismatch(String?)
        /// Not a JSON object, a field of the wrong type, a missing token_endpoint, an endpoint that is
        /// not a URL or is http:// to another machine.
        case unusable(String)
    }

    /// The metadata in `body`, checked against `issuer`.
    package static func parse(_ body: [UInt8], issuer: Issuer) -> Result<AuthorizationServerMetadata, Problem> {
        guard let object = JSONText.object(body) else {
            return .failure(.unusable("it is not a JSON object"))
        }
        guard let named = object["issuer"] as? String, named == issuer.text else {
            return .failure(.issuerMismatch(object["issuer"] as? String))
        }
        do throws(Problem) {
            guard let token = try Self.endpoint("token_endpoint", in: object) else {
                throw .unusable("it has no token_endpoint")
            }
            return .success(
                AuthorizationServerMetadata(
                    tokenEndpoint: token,
                    authorizationEndpoint: try Self.endpoint("authorization_endpoint", in: object),
                    deviceAuthorizationEndpoint: try Self.endpoint("device_authorization_endpoint", in: object),
                    revocationEndpoint: try Self.endpoint("revocation_endpoint", in: object),
                    registrationEndpoint: try Self.endpoint("registration_endpoint", in: object),
                    grantTypes: try Self.strings("grant_types_supported", in: object),
                    tokenEndpointAuthMethods: try Self.strings("token_endpoint_auth_methods_supported", in: object),
                    codeChallengeMethods: try Self.strings("code_challenge_methods_supported", in: object)
                )
            )
        } catch {
            return .failure(error)
        }
    }

    /// The URL of `field`, nil when absent.
    private static func endpoint(_ field: String, in object: [String: Any]) throws(Problem) -> HTTPURL? {
        guard let value = object[field] else { return nil }
        guard let text = value as? String else { throw .unusable("\(field) is not a string") }
        let url: HTTPURL
        switch HTTPURL.parse(text) {
        case .success(let parsed): url = parsed
        case .failure(let error): throw .unusable("\(field) '\(HTTPURL.quotable(text))' \(error.reason)")
        }
        guard url.isHTTPS || Configuration.isLoopback(url.host) else {
            throw .unusable(
                "\(field) '\(HTTPURL.quotable(text))' is http:// to another machine (only https://, or http:// on a loopback address)"
            )
        }
        return url
    }

    private static func strings(_ field: String, in object: [String: Any]) throws(Problem) -> [String]? {
        guard let value = object[field] else { return nil }
        guard let list = value as? [String] else { throw .unusable("\(field) is not a list of strings") }
        return list
    }
}
