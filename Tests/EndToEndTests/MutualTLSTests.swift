import BearerCore
import BearerDemo
import BearerHTTP
import BearerIO
import BearerTestSupport
import Foundation
import Glibc
import Testing

/// A test CA of its own for client certificates (root → intermediate → leaf, made with the openssl
/// command), and a leaf file holding the chain.
final class ClientCertificates {
    static let subject = "/CN=bearer-proxy-test-client"
    let root: String
    let chain: String
    let key: String
    /// A certificate no CA the servers trust vouches for, with its own key.
    let stranger: String
    let strangerKey: String

    init() throws {
        let material = try TestKeys.material()
        let name = "client-ca-\(UInt32.random(in: 0...UInt32.max))"
        let ca = try material.certificateAuthority(name: name)
        self.root = ca.root
        self.key = try material.privateKey(.p256, name: "\(name)-leaf.key")
        let leaf = try material.clientCertificate(
            commonName: "bearer-proxy-test-client",
            key: self.key,
            issuer: (ca.intermediate, ca.intermediateKey),
            name: "\(name)-leaf.pem"
        )
        self.chain = try material.concatenate([leaf, ca.intermediate], name: "\(name)-chain.pem")
        self.strangerKey = try material.privateKey(.p256, name: "\(name)-stranger.key")
        self.stranger = try material.selfSignedCertificate(
            commonName: "stranger",
            key: self.strangerKey,
            name: "\(name)-stranger.pem"
        )
    }

    /// The config lines that present the leaf and its intermediate.
    var lines: String { "tls_client_cert = \(self.chain)\ntls_client_key = \(self.key)" }
}

/// Mutual TLS (RFC 8705) against the binary: a token endpoint and an upstream that require a client
/// certificate from the test CA (which trusts only the root, so the intermediate must be sent).
@Suite(.requires(.openssl))
struct MutualTLSTests {
    let certificates: ClientCertificates

    init() throws {
        self.certificates = try ClientCertificates()
    }

    func proxy(clientAuth: Bool = true) throws -> SignedTokenProxy {
        let root = self.certificates.root
        return try SignedTokenProxy(
            tokenTLS: try E2ETLSFixtures.server(clientCA: root),
            upstreamTLS: try E2ETLSFixtures.server(clientCA: root)
        ) {
            $0.clientID = "mtls-client"
            if clientAuth { $0.assertions.clientCertificateSubject = ClientCertificates.subject }
        }
    }

    @Test func theTokenEndpointAndTheUpstreamAreReachedWithTheCertificate() throws {
        let proxy = try self.proxy()
        #expect(proxy.tokenServer.url.hasPrefix("https://") && proxy.upstream.server.baseURL.hasPrefix("https://"))
        try proxy.start("client_id = mtls-client\nclient_auth = tls_client_auth\n\(self.certificates.lines)")
        try proxy.storm(callCount: { proxy.tokenServer.callCount })
        proxy.stop()
        #expect(proxy.tokenServer.assertionRefusals.isEmpty, "\(proxy.tokenServer.assertionRefusals)")
        let calls = proxy.tokenServer.recordedCalls
        #expect(calls.count == 4)
        // tls_client_auth: client_id alone, no secret, no Basic header.
        #expect(calls.allSatisfy { $0.form == ["grant_type": "client_credentials", "client_id": "mtls-client"] })
        #expect(calls.allSatisfy { $0.authorization == nil })
        let requests = proxy.upstream.requests
        #expect(requests.count >= 3 * 30, "every request reached the upstream (some twice: a 401, then the replay)")
        #expect(requests.allSatisfy { $0.clientCertificateSubject == ClientCertificates.subject })
        #expect(proxy.process.standardError.contains("tls_client_cert=\"\(ClientCertificates.subject)\""))
    }

    @Test func withoutACertificateTheUpstreamIsA502SayingItAskedForOne() throws {
        let proxy = try self.proxy()
        try proxy.start("", staticToken: "static-token")
        let response = try proxy.get("/x")
        #expect(response.status == 502)
        // Under TLS 1.3 the server's alert comes after the client's handshake, and often with a reset
        // that overtakes it: the sentence is the same either way, the alert named when it was read.
        #expect(
            response.text.hasPrefix(
                "bearer-proxy: TLS to upstream 127.0.0.1:\(proxy.upstream.server.port) failed: the server asked for a"
                    + " TLS client certificate and none is configured (set tls_client_cert and tls_client_key)"
            ),
            "\(response.text)"
        )
        #expect(proxy.upstream.requests.isEmpty)
        proxy.stop()
    }

    @Test func withoutACertificateTheTokenEndpointIsA502SayingItAskedForOne() throws {
        let proxy = try self.proxy()
        try proxy.start("client_id = mtls-client\nrefresh_timeout = 1s", waitsForToken: false)
        let response = try proxy.get("/x")
        #expect(response.status == 502)
        #expect(
            response.text.contains("token endpoint 127.0.0.1:\(proxy.tokenServer.server.port): TLS failed:"),
            "\(response.text)"
        )
        #expect(
            response.text.contains(
                "the server asked for a TLS client certificate and none is configured (set tls_client_cert and tls_client_key)"
            ),
            "\(response.text)"
        )
        #expect(proxy.tokenServer.recordedCalls.isEmpty)
        proxy.stop()
    }

    @Test func aCertificateFromAnotherCAIsRefusedAndTheRefusalNamed() throws {
        let proxy = try self.proxy()
        try proxy.start(
            "tls_client_cert = \(self.certificates.stranger)\ntls_client_key = \(self.certificates.strangerKey)",
            staticToken: "static-token"
        )
        let response = try proxy.get("/x")
        #expect(response.status == 502)
        // TLS 1.3: the alert, or a reset that overtook it (see above).
        let port = proxy.upstream.server.port
        #expect(
            response.text.hasPrefix(
                "bearer-proxy: TLS to upstream 127.0.0.1:\(port) failed: the server refused the TLS client certificate (tlsv1 alert unknown ca): "
            )
                || response.text.hasPrefix(
                    "bearer-proxy: TLS to upstream 127.0.0.1:\(port) failed: the server ended the connection without a word after asking for the TLS client certificate: it may have refused it ("
                ),
            "\(response.text)"
        )
        #expect(
            response.text.hasSuffix("(is tls_client_cert issued by a CA it trusts, and still valid?)\n")
                || response.text.hasSuffix(": is tls_client_cert issued by a CA it trusts, and still valid?\n")
        )
        #expect(proxy.upstream.requests.isEmpty)
        proxy.stop()
    }

    @Test func aTLS12ServerNamesTheFailureInTheHandshake() throws {
        // openssl s_server, limited to TLS 1.2: there the alert ends the handshake itself.
        let server = try OpenSSLServer(clientCA: self.certificates.root, arguments: ["-tls1_2"])
        defer { server.stop() }
        let prefix = "bearer-proxy: TLS to upstream 127.0.0.1:\(server.port) failed: handshake failed: "
        let none = try Self.oneRequest(to: server.port, "")
        #expect(none.status == 502)
        #expect(
            none.text
                == prefix + "the server asked for a TLS client certificate and none is configured (set tls_client_cert"
                + " and tls_client_key) (sslv3 alert handshake failure)\n"
        )
        let stranger = try Self.oneRequest(
            to: server.port,
            "tls_client_cert = \(self.certificates.stranger)\ntls_client_key = \(self.certificates.strangerKey)"
        )
        #expect(stranger.status == 502)
        #expect(
            stranger.text
                == prefix + "the server refused the TLS client certificate (tlsv1 alert unknown ca): is tls_client_cert"
                + " issued by a CA it trusts, and still valid?\n"
        )
        // With the certificate (and its intermediate), the same server answers.
        let answered = try Self.oneRequest(to: server.port, self.certificates.lines)
        #expect(answered.status == 200, "\(answered.text)")
    }

    /// One GET through a proxy whose upstream is `https://127.0.0.1:port`, with a static token.
    static func oneRequest(to port: Int, _ lines: String) throws -> BlockingHTTPClient.Response {
        let config = temporaryFile(
            """
            listen = 127.0.0.1:0
            upstream = https://127.0.0.1:\(port)
            ca_file = \(E2ETLSFixtures.caFile)
            access_token = static-token
            \(lines)
            """
        )
        let process = try ProxyProcess(["--config", config])
        defer {
            process.signal(SIGTERM)
            #expect(process.waitForExit() == 0)
        }
        let address = SocketAddress(
            ipAddress: "127.0.0.1",
            port: try tcpPort(of: try #require(process.waitUntilListening()))
        )!
        return try httpRequest(address, "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(address.port!)\r\n\r\n")
    }

    @Test func theCertificateGoesOnlyToTheHostsItIsFor() throws {
        // Another https host a client names through the proxy asks for a certificate (optionally):
        // it gets none; the upstream gets it.
        let other = MockUpstream(
            group: e2eMockGroup,
            tls: try E2ETLSFixtures.server(clientCA: self.certificates.root, required: false)
        )
        try other.start()
        defer { other.stop() }
        let proxy = try self.proxy(clientAuth: false)
        try proxy.start(self.certificates.lines, staticToken: "static-token")
        let upstream = try proxy.get("/x")
        #expect(upstream.status == 401, "the upstream answered (the mock authority does not know the static token)")
        #expect(proxy.upstream.requests.last?.clientCertificateSubject == ClientCertificates.subject)
        let forwarded = try httpRequest(
            proxy.address,
            "GET https://localhost:\(other.server.port)/elsewhere HTTP/1.1\r\nHost: localhost:\(other.server.port)\r\n\r\n"
        )
        #expect(forwarded.status == 200, "\(forwarded.text)")
        #expect(other.requests.count == 1)
        #expect(other.requests.last?.clientCertificateSubject == nil, "no certificate for a host it is not for")
        #expect(other.requests.last?.header("authorization") == nil)
        proxy.stop()
    }
}

/// `openssl s_server` asking for a client certificate from `clientCA` (and refusing a connection
/// without one), serving a status page on a free loopback port; stopped by its PID.
final class OpenSSLServer {
    let process: ChildProcess
    let port: Int
    /// The server's stdin: held open so it does not read an end of input and quit.
    private let input = makeClosingPipe()

    init(clientCA: String, arguments: [String]) throws {
        let executable = try #require(TestKeyMaterial.executable, Comment(rawValue: ExternalTool.openssl.skipReason))
        // A free port: bound, read, released, then given to the server (its own output is buffered
        // when it is a pipe, so the port it would print cannot be waited for).
        let probe = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        self.port = try #require(Socket.localAddress(probe)?.port)
        Socket.close(probe)
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        self.process = try ChildProcess(
            [
                executable, "s_server", "-accept", "127.0.0.1:\(self.port)", "-cert",
                E2ETLSFixtures.serverCertificate, "-key", E2ETLSFixtures.serverKey, "-CAfile", clientCA, "-Verify",
                "2", "-verify_return_error", "-www", "-quiet",
            ] + arguments,
            stdin: self.input.read,
            stdout: null,
            stderr: null
        )
        let address = SocketAddress(ipAddress: "127.0.0.1", port: self.port)!
        #expect(waitUntil { (try? BlockingHTTPClient(connectingTo: address)) != nil }, "s_server did not listen")
    }

    func stop() {
        self.process.signal(SIGKILL)
        _ = self.process.waitUntilExit()
        close(self.input.read)
        close(self.input.write)
    }
}
