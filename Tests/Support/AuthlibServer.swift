import BearerIO
import Foundation
import Glibc

/// A real authorization server that nobody here wrote: Authlib (Debian's python3-authlib) behind
/// Python's http.server on a 127.0.0.1 port, serving RFC 8414 metadata where Authlib's own
/// `get_well_known_url` puts it, a token endpoint for client_credentials, refresh_token and the
/// authorization code with PKCE (S256, required), and an authorization endpoint that approves at
/// once for a loopback redirect URI (the test plays the browser). With `device`, it also offers the
/// device authorization grant (RFC 8628, Authlib's `DeviceAuthorizationEndpoint` and
/// `DeviceCodeGrant`): a code stays pending until the test, as the person, opens
/// `/device?user_code=…`.
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

    /// Whether the metadata names a client registration endpoint (RFC 7591, Authlib's
    /// `ClientRegistrationEndpoint`), and whether it registers the public client bearer-proxy asks for.
    package enum Registration: String, Sendable {
        case none
        /// Registers public clients (`token_endpoint_auth_method` none is offered).
        case open
        /// Offers only client_secret_basic/post, so Authlib itself refuses a public client
        /// (`invalid_client_metadata`).
        case refusing
    }

    /// What its access tokens are: opaque, or unsigned JWTs whose `aud` is the RFC 8707 resource
    /// the token request asked for (as a server that honours it makes them) or always the client (a
    /// server that ignores it). With JWTs, its API (`/api`) takes only a token whose `aud` is its
    /// resource.
    package enum Audience: String, Sendable {
        case opaque
        case resource
        case ignored
    }

    package let port: Int
    package let issuer: String
    package let clientID = "authlib-client"
    package let clientSecret = "authlib-secret-1"
    private let pid: pid_t

    /// The protected resource this server also describes (RFC 9728 metadata at
    /// `/.well-known/oauth-protected-resource/api`, naming this issuer): `resource` says which resource
    /// the document names, so that a mismatch can be shown. It also serves it: `/api` answers 200 to a
    /// token this server issued, else 401 with `resource_metadata` naming the document (at
    /// `/meta/api` instead with `namesMetadataElsewhere`).
    package var resourceURL: String { "http://127.0.0.1:\(self.port)/api" }

    package init(
        mode: Mode,
        issuerPath: String = "",
        registration: Registration = .none,
        resource: String? = nil,
        namesMetadataElsewhere: Bool = false,
        audience: Audience = .opaque,
        device: Bool = false
    ) throws {
        let fd = try Socket.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0)!)
        defer { Socket.close(fd) }
        self.port = Socket.localAddress(fd)!.port!
        self.issuer = "http://127.0.0.1:\(self.port)\(issuerPath)"
        let settings = [
            "mode": mode.rawValue, "issuer": self.issuer, "client_id": self.clientID,
            "client_secret": self.clientSecret, "registration": registration.rawValue,
            "resource": resource ?? "http://127.0.0.1:\(self.port)/api",
            "api_metadata": namesMetadataElsewhere ? "named" : "wellknown",
            "audience": audience.rawValue,
            "device": device ? "yes" : "",
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

    /// Every token it issued so far is expired from now on: its API (`/api`) answers 401 to each
    /// (`POST /expire`, a route of this test server only).
    package func expireTokens() throws {
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: self.port)!,
            "POST /expire HTTP/1.1\r\nHost: 127.0.0.1:\(self.port)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        precondition(response.status == 200, "POST /expire answered \(response.status)")
    }

    /// The clients it registered, oldest first, each its client metadata as Authlib kept it
    /// (`GET /registered`, a route of this test server only).
    package func registeredClients() throws -> [[String: Any]] {
        let response = try httpRequest(
            SocketAddress(ipAddress: "127.0.0.1", port: self.port)!,
            "GET /registered HTTP/1.1\r\nHost: 127.0.0.1:\(self.port)\r\nConnection: close\r\n\r\n"
        )
        return try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]] ?? []
    }

    package func stop() {
        guard Glibc.kill(self.pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(self.pid, &status, 0)
    }

    static let script = #"""
        import base64, json, os, secrets, socket, sys
        os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # the tests' issuer is http:// on 127.0.0.1
        from http.server import HTTPServer, BaseHTTPRequestHandler
        from urllib.parse import parse_qsl
        from authlib.oauth2 import AuthorizationServer, OAuth2Request
        from authlib.oauth2.rfc6749 import ClientMixin
        from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, ClientCredentialsGrant, RefreshTokenGrant
        from authlib.oauth2.rfc7636 import CodeChallenge
        from authlib.oauth2.rfc6750 import BearerTokenGenerator
        from authlib.oauth2.rfc8414 import AuthorizationServerMetadata, get_well_known_url
        from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
        from authlib.oauth2.rfc8628 import (
            DEVICE_CODE_GRANT_TYPE, DeviceAuthorizationEndpoint, DeviceCodeGrant, DeviceCredentialDict)

        settings = json.loads(sys.argv[1])
        issuer, mode = settings["issuer"], settings["mode"]
        origin = issuer.split("/", 3)[0] + "//" + issuer.split("/", 3)[2]
        registration = settings["registration"]
        issued, registered, expired = [], {}, set()
        codes, refresh_tokens = {}, {}

        class Code:
            def __init__(self, request):
                self.redirect_uri, self.scope = request.redirect_uri, request.scope
                self.code_challenge = request.data.get("code_challenge")
                self.code_challenge_method = request.data.get("code_challenge_method")
            def get_redirect_uri(self): return self.redirect_uri
            def get_scope(self): return self.scope

        class CodeGrant(AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
            def save_authorization_code(self, code, request): codes[code] = Code(request)
            def query_authorization_code(self, code, client): return codes.get(code)
            def delete_authorization_code(self, authorization_code):
                for code in [c for c, v in codes.items() if v is authorization_code]: del codes[code]
            def authenticate_user(self, authorization_code): return "alice"

        class Refresh:
            def __init__(self, scope): self.scope = scope
            def get_scope(self): return self.scope
            def get_expires_in(self): return 3600
            def is_expired(self): return False
            def is_revoked(self): return False
            def check_client(self, client): return True

        class RefreshGrant(RefreshTokenGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
            INCLUDE_NEW_REFRESH_TOKEN = True
            def authenticate_refresh_token(self, refresh_token): return refresh_tokens.get(refresh_token)
            def authenticate_user(self, credential): return "alice"
            def revoke_old_credential(self, credential):
                for token in [t for t, v in refresh_tokens.items() if v is credential]: del refresh_tokens[token]

        class Client(ClientMixin):
            def get_client_id(self): return settings["client_id"]
            def get_default_redirect_uri(self): return None
            def get_allowed_scope(self, scope): return scope
            def check_redirect_uri(self, uri): return uri.startswith("http://127.0.0.1:")
            def check_client_secret(self, secret): return secret == settings["client_secret"]
            def check_endpoint_auth_method(self, method, endpoint):
                return method in ("client_secret_basic", "client_secret_post")
            def check_response_type(self, response_type): return response_type == "code"
            def check_grant_type(self, grant_type):
                return grant_type in ("client_credentials", "authorization_code", "refresh_token")

        def loopback(uri):
            # RFC 8252 §7.3: a loopback redirect URI matches whatever port the client listens on.
            scheme, _, rest = uri.partition("://")
            host, _, path = rest.partition("/")
            return scheme, host.rsplit(":", 1)[0], path

        class PublicClient(ClientMixin):
            def __init__(self, client_id, metadata): self.client_id, self.metadata = client_id, metadata
            def get_client_id(self): return self.client_id
            def get_default_redirect_uri(self): return None
            def get_allowed_scope(self, scope): return scope
            def check_redirect_uri(self, uri):
                return loopback(uri) in [loopback(u) for u in self.metadata.get("redirect_uris", [])]
            def check_client_secret(self, secret): return False
            def check_endpoint_auth_method(self, method, endpoint):
                return method == self.metadata["token_endpoint_auth_method"] == "none"
            def check_response_type(self, response_type): return response_type in self.metadata["response_types"]
            def check_grant_type(self, grant_type): return grant_type in self.metadata["grant_types"]

        class Registration(ClientRegistrationEndpoint):
            def authenticate_token(self, request): return "open registration"
            def get_server_metadata(self): return dict(metadata)
            def save_client(self, client_info, client_metadata, request):
                registered[client_info["client_id"]] = client_metadata
                return PublicClient(client_info["client_id"], client_metadata)

        class Server(AuthorizationServer):
            def query_client(self, client_id):
                if client_id in registered: return PublicClient(client_id, registered[client_id])
                return Client() if client_id == settings["client_id"] else None
            def save_token(self, token, request):
                issued.append(token["access_token"])
                if "refresh_token" in token: refresh_tokens[token["refresh_token"]] = Refresh(token.get("scope"))
            def send_signal(self, name, *args, **kwargs): pass
            def create_oauth2_request(self, request): return request
            def create_json_request(self, request): return request
            def handle_response(self, status, body, headers): return status, body, headers

        server = Server()
        server.register_grant(ClientCredentialsGrant)
        server.register_grant(CodeGrant, [CodeChallenge(required=True)])
        server.register_grant(RefreshGrant)
        server.register_endpoint(Registration)
        devices, approved = {}, set()

        class DeviceEndpoint(DeviceAuthorizationEndpoint):
            INTERVAL = 1
            def get_verification_uri(self): return origin + "/device"
            def save_device_credential(self, client_id, scope, data):
                devices[data["device_code"]] = DeviceCredentialDict(client_id=client_id, scope=scope, **data)

        class DeviceGrant(DeviceCodeGrant):
            # Pending until the test, as the person, opens /device?user_code=….
            def query_device_credential(self, device_code): return devices.get(device_code)
            def query_user_grant(self, user_code): return ("alice", True) if user_code in approved else None
            def should_slow_down(self, credential): return False

        if settings["device"]:
            server.register_grant(DeviceGrant)
            server.register_endpoint(DeviceEndpoint)
        asked = {"resource": None}  # the token request's RFC 8707 resource (one request at a time)

        def jwt_part(value): return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

        def access_token(client, grant_type, user=None, scope=None, **kwargs):
            if settings["audience"] == "opaque": return "authlib-" + secrets.token_urlsafe(16)
            # An unsigned JWT whose aud is the resource asked for, or the client when resource is ignored.
            honours = settings["audience"] == "resource" and asked["resource"]
            claims = {"aud": asked["resource"] if honours else client.get_client_id(), "sub": "alice",
                      "jti": secrets.token_urlsafe(8)}
            return jwt_part({"alg": "none", "typ": "at+jwt"}) + "." + jwt_part(claims) + "."

        def audience(token):
            try: return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "==")).get("aud")
            except Exception: return None

        server.register_token_generator(
            "default", BearerTokenGenerator(
                access_token, lambda *args, **kwargs: "authlib-refresh-" + secrets.token_urlsafe(16)))

        metadata = AuthorizationServerMetadata({
            "issuer": issuer + "/other" if mode == "mismatch" else issuer,
            "token_endpoint": "http://auth.example.net/token" if mode == "remote-http" else origin + "/token",
            "revocation_endpoint": origin + "/revoke",
            "authorization_endpoint": origin + "/authorize",
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["client_credentials", "authorization_code", "refresh_token"]
                + ([DEVICE_CODE_GRANT_TYPE] if settings["device"] else []),
            **({"device_authorization_endpoint": origin + "/device_authorization"} if settings["device"] else {}),
            "token_endpoint_auth_methods_supported":
                ["client_secret_post", "client_secret_basic"] + (["none"] if registration == "open" else []),
            "response_types_supported": ["code"],
            **({"registration_endpoint": origin + "/register"} if registration != "none" else {}),
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

            def api(self):
                # The protected resource at /api: a token this server issued and did not expire, else
                # 401 naming its metadata (RFC 9728 §5.1) at the well-known address or elsewhere.
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                for_me = settings["audience"] == "opaque" or audience(token) == settings["resource"]
                if token in issued and token not in expired and for_me:
                    self.answer(200, {"api": self.path})
                    return
                named = origin + ("/meta/api" if settings["api_metadata"] == "named" else "/.well-known/oauth-protected-resource/api")
                error = ', error="invalid_token"' if token else ""
                self.answer(401, {"error": "invalid_token"}, [("WWW-Authenticate", f'Bearer resource_metadata="{named}"{error}')])

            def do_GET(self):
                if self.path == "/api" or self.path.startswith("/api/"):
                    self.api()
                elif wellknown is not None and self.path == wellknown:
                    self.answer(200, dict(metadata))
                elif self.path in ("/.well-known/oauth-protected-resource/api", "/meta/api"):
                    self.answer(200, {"resource": settings["resource"], "authorization_servers": [issuer]})
                elif self.path == "/issued":
                    self.answer(200, issued)
                elif self.path == "/registered":
                    self.answer(200, list(registered.values()))
                elif self.path.startswith("/device?user_code="):
                    approved.add(self.path.split("=", 1)[1])
                    self.answer(200, {"approved": True})
                elif self.path.startswith("/authorize?"):
                    request = OAuth2Request("GET", origin + self.path, None, self.headers)
                    self.answer(*server.create_authorization_response(request, grant_user="alice"))
                else:
                    self.answer(404, {"error": "not_found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                if self.path == "/expire":
                    expired.update(issued)
                    self.answer(200, {})
                    return
                if self.path == "/device_authorization" and settings["device"]:
                    request = OAuth2Request("POST", origin + self.path, dict(parse_qsl(body)), self.headers)
                    self.answer(*server.create_endpoint_response("device_authorization", request))
                    return
                if self.path == "/register" and registration != "none":
                    request = OAuth2Request("POST", origin + self.path, json.loads(body or "{}"), self.headers)
                    self.answer(*server.create_endpoint_response("client_registration", request))
                    return
                form = dict(parse_qsl(body))
                if self.path != "/token":
                    self.answer(404, {"error": "not_found"})
                    return
                asked["resource"] = form.get("resource")
                request = OAuth2Request("POST", origin + self.path, form, self.headers)
                self.answer(*server.create_token_response(request))

            def log_message(self, format, *args): pass

            def handle_one_request(self):
                # A mistake here is an answer the test sees (500), not a connection left hanging.
                try:
                    super().handle_one_request()
                except Exception as error:
                    self.answer(500, {"error": "server_error", "error_description": repr(error)})

        listener = socket.socket(fileno=0)
        listener.setblocking(True)
        httpd = HTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        httpd.socket = listener
        httpd.serve_forever()
        """#
}
