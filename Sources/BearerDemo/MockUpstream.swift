import BearerCore
import BearerIO
import Synchronization

/// A mock API: checks the bearer token, records what it received, and answers by path.
///
/// Paths: `/bytes/N` (N streamed bytes with Content-Length), `/chunked/N`, `/close/N`
/// (close-delimited), `/status/NNN`, `/echo` (the request body back), `/hang` (never answers),
/// `/reset`, `/hop` (hop-by-hop fields, one named by `Connection`, beside an end-to-end `X-End`),
/// anything else: a JSON description of the request (method, target, headers, body size).
/// A WebSocket handshake on any path is accepted (with a valid token) and echoes frames.
package final class MockUpstream: Sendable {
    package let server: MockHTTPServer
    /// Tokens the API accepts; when nil (and there is no authority), any request is accepted.
    private let acceptedTokens: Set<String>?
    /// Accepts the tokens this authority issued and has not revoked.
    package let authority: MockTokenAuthority?
    /// How many times each `X-Request-Id` was seen (the bench checks no request arrives more than twice).
    private let requestIDCounts = Locked<[Int: Int]>([:])
    package let countsRequestIDs: Bool
    package let rejected = Atomic<Int>(0)
    package let accepted = Atomic<Int>(0)
    private let recorded = Locked<[RecordedRequest]>([])
    package let recordsRequests: Bool
    /// DPoP (RFC 9449 §7): requests must carry `Authorization: DPoP` with a token bound to the key
    /// of a valid proof for this very request (BearerTestSupport's `MockDPoPRules` checks it; its
    /// `dpop` is this as those rules).
    package let dpopCheck: (any MockDPoPCheck)?

    package struct RecordedRequest: Sendable {
        package var method: String
        package var target: String
        package var headers: [(name: String, value: String)]
        package var body: [UInt8]
        /// Over TLS: the subject of the client's certificate, if it presented one.
        package var clientCertificateSubject: String?

        package func header(_ name: String) -> String? {
            self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        package func headerValues(_ name: String) -> [String] {
            self.headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        }
    }

    package init(
        group: EventLoopGroup,
        acceptedTokens: Set<String>? = nil,
        authority: MockTokenAuthority? = nil,
        recordsRequests: Bool = true,
        countsRequestIDs: Bool = false,
        tls: TLSContext? = nil,
        dpop: (any MockDPoPCheck)? = nil,
        network: any StreamNetwork = SocketNetwork()
    ) {
        self.dpopCheck = dpop
        self.acceptedTokens = acceptedTokens
        self.authority = authority
        self.recordsRequests = recordsRequests
        self.countsRequestIDs = countsRequestIDs
        let box = UpstreamBox()
        // An upload sent with Expect: 100-continue and a bad token is refused before its body, as real APIs do.
        self.server = MockHTTPServer(
            group: group,
            tls: tls,
            network: network,
            expectHandler: { head in
                guard let upstream = box.upstream, upstream.dpopCheck == nil,
                    !upstream.isAuthorized(head.value(of: "authorization"))
                else {
                    return nil
                }
                upstream.rejected.add(1, ordering: .relaxed)
                return .json(401, #"{"error":"invalid_token"}"#)
            },
            handler: { request in box.upstream!.handle(request) }
        )
        box.upstream = self
    }

    private final class UpstreamBox: @unchecked Sendable {
        weak var upstream: MockUpstream?
    }

    @discardableResult
    package func start(
        on address: SocketAddress = SocketAddress(ipAddress: "127.0.0.1", port: 0)!
    ) throws(IOError) -> SocketAddress {
        try self.server.start(on: address)
    }

    package func stop() {
        self.server.stop()
    }

    package var port: Int { self.server.port }
    package var baseURL: String { self.server.baseURL }

    package var requests: [RecordedRequest] {
        self.recorded.withLock { $0 }
    }

    /// The most times one `X-Request-Id` reached the upstream, and how many ids were seen.
    package var requestIDStatistics: (maximum: Int, distinct: Int) {
        self.requestIDCounts.withLock { ($0.values.max() ?? 0, $0.count) }
    }

    package func resetRequestIDs() {
        self.requestIDCounts.withLock { $0.removeAll(keepingCapacity: true) }
    }

    func handle(_ request: MockRequest) -> MockResponse {
        if self.recordsRequests {
            let record = RecordedRequest(
                method: request.method,
                target: request.target,
                headers: request.headers,
                body: request.body,
                clientCertificateSubject: request.clientCertificateSubject
            )
            self.recorded.withLock { $0.append(record) }
        }
        if self.countsRequestIDs, let id = request.header("x-request-id").flatMap({ Int($0) }) {
            self.requestIDCounts.withLock { $0[id, default: 0] += 1 }
        }
        let authorization = request.header("authorization") ?? ""
        var presented = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : nil
        if let rules = self.dpopCheck {
            if let refusal = self.checkDPoP(request, rules) { return refusal }
            presented = String(authorization.dropFirst(5))
        } else if !self.isAuthorized(request.header("authorization")) {
            self.rejected.add(1, ordering: .relaxed)
            return .json(
                401,
                #"{"error":"invalid_token"}"#,
                headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")]
            )
        }
        self.accepted.add(1, ordering: .relaxed)
        if request.path == "/bench" { return Self.benchResponse }
        if request.head.upgradesToWebSocket {
            return MockResponse(status: 101, body: .webSocketEcho(greeting: "welcome to \(request.path)"))
        }
        let parts = request.path.split(separator: "/").map(String.init)
        switch (parts.first, parts.count) {
        case ("whoami", 1):
            let generation =
                presented.flatMap { self.authority?.number(of: $0) }.map { "token generation \($0)" }
                ?? "a static token"
            return .text(200, "Hello! This request reached the upstream with \(generation).\n")
        case ("bytes", 2): return MockResponse(status: 200, body: .streamed(length: Int(parts[1]) ?? 0, chunked: false))
        case ("chunked", 2):
            return MockResponse(status: 200, body: .streamed(length: Int(parts[1]) ?? 0, chunked: true))
        case ("close", 2):
            return MockResponse(status: 200, body: .closeDelimited((0..<(Int(parts[1]) ?? 0)).map(mockPatternByte)))
        case ("status", 2): return .text(Int(parts[1]) ?? 500, "status \(parts[1])\n")
        case ("echo", 1):
            return MockResponse(
                status: 200,
                headers: [("Content-Type", "application/octet-stream")],
                body: .fixed(request.body)
            )
        case ("hang", 1): return MockResponse(status: 200, body: .none)
        case ("slow", 2):
            return MockResponse(
                status: 200,
                body: .delayed(.milliseconds(Int64(parts[1]) ?? 1000), Array("slow\n".utf8))
            )
        case ("reset", 1): return MockResponse(status: 200, body: .reset)
        case ("hop", 1):
            return MockResponse(
                status: 200,
                headers: [
                    ("Connection", "X-Hop"), ("Keep-Alive", "timeout=5"), ("X-Hop", "dropped"), ("X-End", "kept"),
                ],
                body: .fixed(Array("hop\n".utf8))
            )
        default: return .json(200, Self.describe(request))
        }
    }

    /// A DPoP request's refusal (401 with a `DPoP` challenge), or nil when its token and proof are good.
    private func checkDPoP(_ request: MockRequest, _ rules: any MockDPoPCheck) -> MockResponse? {
        let authorization = request.header("authorization") ?? ""
        func refuse(_ error: String, _ headers: [(String, String)] = []) -> MockResponse {
            self.rejected.add(1, ordering: .relaxed)
            return .json(
                401,
                #"{"error":"\#(error)"}"#,
                headers: [("WWW-Authenticate", #"DPoP algs="ES256", error="\#(error)""#)] + headers
            )
        }
        guard authorization.hasPrefix("DPoP ") else { return refuse("invalid_token") }
        let token = String(authorization.dropFirst(5))
        guard self.authority?.accepts(token) ?? true else { return refuse("invalid_token") }
        let scheme = self.server.baseURL.hasPrefix("https") ? "https" : "http"
        let verdict = rules.check(
            request.header("dpop"),
            method: request.method,
            targetURI: "\(scheme)://\(request.header("host") ?? "")\(request.path)",
            accessToken: token,
            boundTo: self.authority?.binding(of: token)
        )
        switch verdict {
        case .accepted: return nil
        case .needsNonce(let nonce): return refuse("use_dpop_nonce", [("DPoP-Nonce", nonce)])
        case .refused: return refuse("invalid_dpop_proof")
        }
    }

    /// The anchors' 58-byte JSON body, prebuilt: the bench's upstream must not be the bottleneck.
    static let benchResponse = MockResponse.json(
        200,
        #"{"ok":true,"upstream":"anchor","auth":"bearer","n":12345}"# + "\n"
    )

    /// Whether an `Authorization` value carries a token this API accepts (any, when it checks none).
    func isAuthorized(_ authorization: String?) -> Bool {
        guard self.acceptedTokens != nil || self.authority != nil else { return true }
        guard let authorization, authorization.hasPrefix("Bearer ") else { return false }
        let token = String(authorization.dropFirst(7))
        return (self.acceptedTokens?.contains(token) ?? false) || (self.authority?.accepts(token) ?? false)
    }

    /// `{"method":…,"target":…,"headers":[[name,value],…],"body_bytes":N}`
    static func describe(_ request: MockRequest) -> String {
        let object: [String: Any] = [
            "method": request.method,
            "target": request.target,
            "headers": request.headers.map { [$0.name, $0.value] },
            "body_bytes": request.body.count,
        ]
        return JSONText.text(of: object)
    }
}
