"""A gRPC server for the tests (Debian's python3-grpcio), with hand-written generic method handlers
on raw bytes (no generated stubs). Each call must carry a token the tests' mock API accepts: the
server asks CHECK_URL (a MockUpstream's /whoami) with the call's `authorization`, and answers
UNAUTHENTICATED otherwise, before any message (so grpcio sends it Trailers-Only).

    grpc_server.py PORT_FILE CHECK_URL [CERTIFICATE KEY]

It listens on 127.0.0.1 on a port of its choosing and writes the number into PORT_FILE (written
whole, then renamed into place): the test waits for the file. Given CERTIFICATE and KEY (PEM files)
it speaks TLS, and grpcio's ALPN offers h2. Methods:
  /test.Echo/Unary   the request's bytes back, after `authorization=` and each value it saw
  /test.Echo/Stream  three messages `part N authorization=…`
  /test.Echo/Late    one message, then UNAUTHENTICATED in the trailers (after DATA)
  /test.Echo/Deadline  the whole seconds left of the call's deadline (`grpc-timeout`) as it arrived
  /test.Echo/Upload  client-streaming: how many bytes the messages held, once all arrived
  /test.Echo/Chat    bidi-streaming: reads the first message, then checks the token (so a refusal
                     comes after a message arrived, Trailers-Only), then answers each message as it
                     comes with `authorization=… <the message's first 16 bytes>`
"""

import os
import sys
import urllib.error
import urllib.request
from concurrent import futures

import grpc

PORT_FILE, CHECK_URL = sys.argv[1], sys.argv[2]


def authorizations(context):
    return [value for key, value in context.invocation_metadata() if key == "authorization"]


def accepted(values):
    if len(values) != 1:
        return False
    request = urllib.request.Request(CHECK_URL, headers={"Authorization": values[0]})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status == 200
    except urllib.error.HTTPError:
        return False


def checked(context):
    values = authorizations(context)
    if not accepted(values):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "token refused")
    return ("authorization=" + "|".join(values)).encode()


def unary(request, context):
    return checked(context) + b" " + request


def stream(request, context):
    seen = checked(context)
    for number in range(3):
        yield b"part %d " % number + seen


def late(request, context):
    yield checked(context)
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "refused after data")


def deadline(request, context):
    checked(context)
    return b"%d" % int(context.time_remaining())


def upload(requests, context):
    size = sum(len(request) for request in requests)
    return checked(context) + b" %d bytes" % size


def chat(requests, context):
    seen = None
    for request in requests:
        if seen is None:
            seen = checked(context)
        yield seen + b" " + request[:16].rstrip(b".")


class Handlers(grpc.GenericRpcHandler):
    methods = {
        "/test.Echo/Unary": grpc.unary_unary_rpc_method_handler(unary),
        "/test.Echo/Stream": grpc.unary_stream_rpc_method_handler(stream),
        "/test.Echo/Late": grpc.unary_stream_rpc_method_handler(late),
        "/test.Echo/Deadline": grpc.unary_unary_rpc_method_handler(deadline),
        "/test.Echo/Upload": grpc.stream_unary_rpc_method_handler(upload),
        "/test.Echo/Chat": grpc.stream_stream_rpc_method_handler(chat),
    }

    def service(self, details):
        return self.methods.get(details.method)


server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), handlers=[Handlers()])
if len(sys.argv) > 4:
    with open(sys.argv[3], "rb") as certificate, open(sys.argv[4], "rb") as key:
        credentials = grpc.ssl_server_credentials([(key.read(), certificate.read())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
else:
    port = server.add_insecure_port("127.0.0.1:0")
server.start()
with open(PORT_FILE + ".part", "w") as file:
    file.write(str(port))
os.rename(PORT_FILE + ".part", PORT_FILE)
server.wait_for_termination()
