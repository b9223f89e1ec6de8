import BearerIO
import Foundation
import Glibc

/// A real authorization server that nobody here wrote: Authlib (Debian's python3-authlib) behind
/// Python's http.server on a 127.0.0.1 port, serving RFC 8414 metadata where Authlib's own
/// `get_well_known_url` puts it and a client_credentials token endpoint.
///
/// The test binds the port and hands the listening socket to Python as its standard input, so the
/// server is reachable the moment it starts and no output is waited for. Ended by its PID.
package final class AuthlibServer: @unchecked Sendable {
    /// What the metadata says, to show each of discovery's failures against a real server.
    package enum Mode: String, Sendable {
        /// RFC 8414 metadata at the path-inserted well-known address.
        case rfc8414
        /// OpenID Connect discovery only (`ISSUER/.well-known/openid-configuration`).
        case openID = "openid"
        /// No metadata at all: 404 at both addresses.
        case none
        /// Metadata naming another issuer.
        case mismatch
        /// A token endpoint on http:// to another machine.
        case remoteHTTP = "remote-http"
    }

    package let port: Int
    package let issuer: String
    package let clientID = "authlib-client"
    package let clientSecret = "authlib-secret-1"
    private let pid: pid_t

    package init(mode: Mode, issuerPath: String = "") throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        self.port = Socket.localAddress(fd)!.port!
        self.issuer = "http://127.0.0.1:\(self.port)\(issuerPath)"
        let settings = [
            "mode": mode.rawValue, "issuer": self.issuer, "client_id": self.clientID,
            "client_secret": self.clientSecret,
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: settings), as: UTF8.self)
        self.pid = try spawnProcess(
            [ExternalTool.pythonAuthlib.program, "-I", "-c", Self.script, json],
            stdin: fd,
            stdout: STDERR_FILENO,
            stderr: STDERR_FILENO
        )
    }

    deinit { self.stop() }

    /// The access tokens it issued, newest last (`GET /issued`, a route of this test server only).
    package func issuedTokens() throws -> [String] {
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: self.port)!,
            "GET /issued HTTP/1.1\r\nHost: 127.0.0.1:\(self.port)\r\nConnection: close\r\n\r\n"
        )
        return try JSONSerialization.jsonObject(with: Data(response.body)) as? [String] ?? []
    }

    package func stop() {
        guard Glibc.kill(self.pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(self.pid, &status, 0)
    }

    static let script = #"""
        import json, os, secrets, socket, sys
        os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # the tests' issuer is http:// on 127.0.0.1
        from http.server import HTTPServer, BaseHTTPRequestHandler
        from urllib.parse import parse_qsl
        from authlib.oauth2 import AuthorizationServer, OAuth2Request
        from authlib.oauth2.rfc6749 import ClientMixin
        from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
        from authlib.oauth2.rfc6750 import BearerTokenGenerator
        from authlib.oauth2.rfc8414 import AuthorizationServerMetadata, get_well_known_url

        settings = json.loads(sys.argv[1])
        issuer, mode = settings["issuer"], settings["mode"]
        origin = issuer.split("/", 3)[0] + "//" + issuer.split("/", 3)[2]
        issued = []

        class Client(ClientMixin):
            def get_client_id(self): return settings["client_id"]
            def get_default_redirect_uri(self): return None
            def get_allowed_scope(self, scope): return scope
            def check_redirect_uri(self, uri): return False
            def check_client_secret(self, secret): return secret == settings["client_secret"]
            def check_endpoint_auth_method(self, method, endpoint):
                return method in ("client_secret_basic", "client_secret_post")
            def check_response_type(self, response_type): return False
            def check_grant_type(self, grant_type): return grant_type == "client_credentials"

        class Server(AuthorizationServer):
            def query_client(self, client_id):
                return Client() if client_id == settings["client_id"] else None
            def save_token(self, token, request): issued.append(token["access_token"])
            def send_signal(self, name, *args, **kwargs): pass
            def create_oauth2_request(self, request): return request
            def create_json_request(self, request): return request
            def handle_response(self, status, body, headers): return status, body, headers

        server = Server()
        server.register_grant(ClientCredentialsGrant)
        server.register_token_generator(
            "default", BearerTokenGenerator(lambda *args, **kwargs: "authlib-" + secrets.token_urlsafe(16)))

        metadata = AuthorizationServerMetadata({
            "issuer": issuer + "/other" if mode == "mismatch" else issuer,
            "token_endpoint": "http://auth.example.net/token" if mode == "remote-http" else origin + "/token",
            "revocation_endpoint": origin + "/revoke",
            "grant_types_supported": ["client_credentials", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "response_types_supported": ["code"],
        })
        if mode == "rfc8414":
            metadata.validate()
        wellknown = {
            "rfc8414": get_well_known_url(issuer), "remote-http": get_well_known_url(issuer),
            "mismatch": get_well_known_url(issuer),
            "openid": issuer[len(origin):] + "/.well-known/openid-configuration",
        }.get(mode)

        class Handler(BaseHTTPRequestHandler):
            def answer(self, status, body, headers=()):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers:
                    if name.lower() != "content-type": self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if wellknown is not None and self.path == wellknown:
                    self.answer(200, dict(metadata))
                elif self.path == "/issued":
                    self.answer(200, issued)
                else:
                    self.answer(404, {"error": "not_found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                if self.path != "/token":
                    self.answer(404, {"error": "not_found"})
                    return
                request = OAuth2Request("POST", origin + self.path, form, self.headers)
                self.answer(*server.create_token_response(request))

            def log_message(self, format, *args): pass

        listener = socket.socket(fileno=0)
        listener.setblocking(True)
        httpd = HTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        httpd.socket = listener
        httpd.serve_forever()
        """#
}
