# An HTTP/2 server for the upstream_http2 tests, written with python3-h2 (Debian's python3-h2).
#
# It fronts an HTTP/1.1 backend (the tests' MockUpstream, which checks tokens and records
# requests): each request it receives is sent on to the backend, and the backend's answer comes
# back with three fields saying what this server saw: x-front-protocol (h2 or http/1.1, as the
# request arrived here), x-front-connection (this connection's number, from 1) and x-front-stream
# (the HTTP/2 stream id). Paths it answers itself: /trailers (a body, then trailers
# `grpc-status: 0`), /goaway (GOAWAY, then the connection closes).
#
# usage: h2_front.py BACKEND_PORT [--tls CERT KEY] [--alpn h2,http/1.1] [--max-streams N], with a
# listening socket as its standard input (the test binds it, so the server is reachable at once);
# ended by its PID. --max-streams: SETTINGS_MAX_CONCURRENT_STREAMS; a stream beyond it is refused
# (h2 resets it with REFUSED_STREAM) and counted: GET /front-refused answers the count. GET
# /front-resets answers how many streams clients reset (RST_STREAM received).
import http.client, http.server, itertools, socket, ssl, sys, threading
import h2.config, h2.connection, h2.events, h2.exceptions, h2.settings

backend_port = int(sys.argv[1])
tls_context = None
if "--tls" in sys.argv:
    index = sys.argv.index("--tls")
    tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls_context.load_cert_chain(sys.argv[index + 1], sys.argv[index + 2])
    alpn = sys.argv[sys.argv.index("--alpn") + 1] if "--alpn" in sys.argv else "h2,http/1.1"
    tls_context.set_alpn_protocols(alpn.split(","))
connection_numbers = itertools.count(1)
max_streams = int(sys.argv[sys.argv.index("--max-streams") + 1]) if "--max-streams" in sys.argv else None
refused = [0]
resets = [0]
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"}


def backend(method, path, headers, body):
    """The backend's status, fields and body for a request."""
    conn = http.client.HTTPConnection("127.0.0.1", backend_port, timeout=20)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in headers:
        conn.putheader(name, value)
    if body or method in ("POST", "PUT", "PATCH"):
        conn.putheader("content-length", str(len(body)))
    conn.endheaders(body or None)
    response = conn.getresponse()
    data = response.read()
    fields = [(k.lower(), v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP | {"content-length"}]
    conn.close()
    return response.status, fields, data


class H2Session:
    def __init__(self, sock, number):
        self.sock = sock
        self.number = number
        self.lock = threading.Condition()
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.requests = {}

    def send(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def serve(self):
        with self.lock:
            if max_streams is not None:
                self.conn.local_settings = h2.settings.Settings(
                    client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: max_streams}
                )
            self.conn.initiate_connection()
            self.send()
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.TooManyStreamsError:
                    refused[0] += 1
                    self.send()
                    continue
                except h2.exceptions.ProtocolError:
                    self.send()
                    return
                for event in events:
                    self.handle(event)
                self.send()
                self.lock.notify_all()

    def handle(self, event):
        if isinstance(event, h2.events.RequestReceived):
            self.requests[event.stream_id] = (list(event.headers), bytearray())
        elif isinstance(event, h2.events.DataReceived):
            self.requests[event.stream_id][1].extend(event.data)
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.start(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            resets[0] += 1

    def start(self, stream_id):
        headers, body = self.requests.pop(stream_id)
        threading.Thread(target=self.respond, args=(stream_id, headers, bytes(body)), daemon=True).start()

    def respond(self, stream_id, headers, body):
        pseudo = {k: v for k, v in headers if k.startswith(":")}
        path = pseudo.get(":path", "/")
        seen = [("x-front-protocol", "h2"), ("x-front-connection", str(self.number)), ("x-front-stream", str(stream_id))]
        if path == "/goaway":
            with self.lock:
                self.conn.close_connection()
                self.send()
            self.sock.shutdown(socket.SHUT_RDWR)
            return
        if path == "/front-refused":
            status, fields, data = 200, [("content-type", "text/plain")], str(refused[0]).encode()
        elif path == "/front-resets":
            status, fields, data = 200, [("content-type", "text/plain")], str(resets[0]).encode()
        elif path == "/trailers":
            status, fields, data = 200, [("content-type", "text/plain")], b"body before trailers\n"
        else:
            regular = [(k, v) for k, v in headers if not k.startswith(":")]
            regular.append(("host", pseudo.get(":authority", "")))
            regular.append(("x-front-te", dict(headers).get("te", "-")))
            status, fields, data = backend(pseudo[":method"], path, regular, body)
        with self.lock:
            try:
                self.answer(stream_id, path, status, fields + seen, data)
            except h2.exceptions.StreamClosedError:
                pass  # the client reset the stream meanwhile

    def answer(self, stream_id, path, status, fields, data):
        head = [(":status", str(status))] + fields
        if path != "/trailers":
            head.append(("content-length", str(len(data))))
        self.conn.send_headers(stream_id, head)
        self.send()
        while data:
            while self.conn.local_flow_control_window(stream_id) == 0:
                self.lock.wait(10)
            size = min(len(data), self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            self.conn.send_data(stream_id, data[:size])
            data = data[size:]
            self.send()
        if path == "/trailers":
            self.conn.send_headers(stream_id, [("grpc-status", "0"), ("grpc-message", "done")], end_stream=True)
        else:
            self.conn.end_stream(stream_id)
        self.send()


class H1Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length) if length else b""
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"content-length"}]
        status, fields, data = backend(self.command, self.path, headers, body)
        self.send_response(status)
        for k, v in fields:
            self.send_header(k, v)
        self.send_header("x-front-protocol", "http/1.1")
        self.send_header("x-front-connection", str(self.server_number))
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = forward


def serve(sock):
    number = next(connection_numbers)
    try:
        if tls_context is not None:
            sock = tls_context.wrap_socket(sock, server_side=True)
            is_h2 = sock.selected_alpn_protocol() == "h2"
        else:
            is_h2 = sock.recv(24, socket.MSG_PEEK) == b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        if is_h2:
            H2Session(sock, number).serve()
        else:
            handler = type("Handler", (H1Handler,), {"server_number": number})
            handler(sock, ("127.0.0.1", 0), None)
    except (OSError, ssl.SSLError):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


listener = socket.socket(fileno=sys.stdin.fileno())
listener.setblocking(True)
while True:
    sock, _ = listener.accept()
    threading.Thread(target=serve, args=(sock,), daemon=True).start()
