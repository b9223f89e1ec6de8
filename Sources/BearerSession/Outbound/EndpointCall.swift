import BearerConfig
import BearerCore
import BearerCrypto
import BearerHTTP
import BearerIO
import Dispatch

/// A request bearer-proxy makes on its own account: to a token, login, device authorization,
/// revocation or logout endpoint (a POST with a body), or for an authorization server's metadata (a
/// GET). The connection closes after the answer.
package struct EndpointRequest: Sendable {
    package var url: HTTPURL
    var contentType: String
    var body: [UInt8]
    /// Extra header fields, such as `Authorization: Basic …` for client_secret_basic.
    var fields: [(String, String)] = []
    /// A token request: with dpop on it carries a DPoP proof (RFC 9449 §5), and a `use_dpop_nonce`
    /// answer is retried once with the nonce it gave.
    var isTokenRequest = false
    /// `POST`, or `GET` (with an empty body: no Content-Type, no Content-Length).
    var method = "POST"
    /// The largest answer body taken; a longer one fails as `responseTooLarge`.
    var maximumResponseBytes = 1 << 20

    /// The whole HTTP/1.1 message. Secret values in the body or fields are already revealed: these
    /// bytes go to the endpoint and nowhere else.
    var bytes: [UInt8] {
        var head = "\(self.method) \(self.url.pathPrefix.isEmpty ? "/" : self.url.pathPrefix) HTTP/1.1\r\n"
        head += "Host: \(self.url.origin.authority)\r\n"
        if self.method != "GET" { head += "Content-Type: \(self.contentType)\r\n" }
        head += "Accept: application/json\r\n"
        head += "User-Agent: bearer-proxy/\(bearerProxyVersion)\r\n"
        for (name, value) in self.fields { head += "\(name): \(value)\r\n" }
        if self.method != "GET" { head += "Content-Length: \(self.body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + self.body
    }
}

/// The one way requests to token, login, device, revocation and logout endpoints leave the process.
///
/// Every call the proxy and `bearer-proxy login`/`logout` make on their own account goes through
/// `send`, so how an endpoint is reached (the `OutboundConnector`: resolution, TLS that fails closed
/// for `https://`) is decided in one place.
package struct EndpointCaller: Sendable {
    package let loop: EventLoop
    let connector: OutboundConnector
    /// The whole exchange, connecting included: `refresh_timeout`.
    let timeout: Duration
    /// With dpop on: the session's proofs for its token requests.
    let dpop: DPoPProver?

    /// `timeout`: refresh_timeout.
    package init(timeout: Duration, dpop: DPoPProver?, loop: EventLoop, connector: OutboundConnector) {
        self.loop = loop
        self.connector = connector
        self.timeout = timeout
        self.dpop = dpop
    }

    /// Sends `request`; `completion` runs once, on the caller's event loop.
    func send(
        _ request: EndpointRequest,
        _ completion: @escaping @Sendable (Result<EndpointResponse, EndpointError>) -> Void
    ) {
        guard let dpop = self.dpop, request.isTokenRequest else {
            self.send(request.bytes, to: request.url.origin, limit: request.maximumResponseBytes, completion)
            return
        }
        self.send(request, proving: dpop, mayRetryForNonce: true, completion)
    }

    /// A token request with a fresh DPoP proof (htm POST, htu the token URL, the endpoint's newest
    /// nonce). The `DPoP-Nonce` of the answer is remembered; a 400 `use_dpop_nonce` with a new nonce
    /// is sent once more with it (RFC 9449 §8), with a new proof.
    private func send(
        _ request: EndpointRequest,
        proving dpop: DPoPProver,
        mayRetryForNonce: Bool,
        _ completion: @escaping @Sendable (Result<EndpointResponse, EndpointError>) -> Void
    ) {
        let origin = request.url.origin
        let url = request.url.pathPrefix.isEmpty ? "\(request.url)/" : request.url.description
        let proof = dpop.proof(
            method: "POST".utf8,
            targetURI: DPoPProver.targetURI(url).utf8,
            accessTokenHash: nil,
            nonce: dpop.nonces.nonce(for: origin)
        )
        var proved = request
        proved.fields.append(("DPoP", String(decoding: proof, as: UTF8.self)))
        self.send(proved.bytes, to: origin, limit: request.maximumResponseBytes) { result in
            guard case .success(let response) = result, let nonce = response.header("dpop-nonce"),
                dpop.nonces.remember(nonce, for: origin)
            else {
                completion(result)
                return
            }
            guard mayRetryForNonce, response.status == 400 || response.status == 401,
                TokenEndpointResponse.parseError(response.body)?.0 == "use_dpop_nonce"
            else {
                completion(result)
                return
            }
            dpop.nonceRetries.add(1, ordering: .relaxed)
            self.send(request, proving: dpop, mayRetryForNonce: false, completion)
        }
    }

    private func send(
        _ bytes: [UInt8],
        to origin: Origin,
        limit: Int,
        _ completion: @escaping @Sendable (Result<EndpointResponse, EndpointError>) -> Void
    ) {
        EndpointClient.send(
            bytes,
            to: origin,
            on: self.loop,
            connector: self.connector,
            timeout: self.timeout,
            maximumResponseBytes: limit,
            completion: completion
        )
    }

    /// Sends `request` and waits for the answer. Blocks the calling thread: for the command line
    /// and for Dispatch's pool, never for an event loop.
    package func sendAndWait(_ request: EndpointRequest) -> Result<EndpointResponse, EndpointError> {
        precondition(!self.loop.inEventLoop, "sendAndWait would block the event loop it waits for")
        let answer = Locked<Result<EndpointResponse, EndpointError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        self.send(request) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0 }!
    }
}
