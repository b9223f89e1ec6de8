"""A gRPC client for the tests (Debian's python3-grpcio), on raw bytes, pointed at the proxy in
h2c (`grpc.insecure_channel`, no proxy from the environment). One line per call, in call order:
`OK <each response message, joined by ' / '>` or `<STATUS CODE NAME> <details>`.

    grpc_client.py TARGET METHOD COUNT [AUTHORIZATION]

COUNT calls of METHOD (`/test.Echo/Unary` or `/Deadline`; `/Upload`, client-streaming, sends four
16 KiB messages; else a server-streaming one), each with a 30 s deadline, run at
once, each with its number as the request; AUTHORIZATION, when given, is sent as the call's own
`authorization` metadata.
"""

import sys
from concurrent import futures

import grpc

target, method, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
metadata = [("authorization", sys.argv[4])] if len(sys.argv) > 4 else None
channel = grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)])
if method.endswith("/Unary") or method.endswith("/Deadline"):
    call = channel.unary_unary(method)
elif method.endswith("/Upload"):
    uploading = channel.stream_unary(method)

    def call(request, timeout, metadata):
        return uploading(iter([request.ljust(16384, b".")] * 4), timeout=timeout, metadata=metadata)
else:
    streaming = channel.unary_stream(method)

    def call(request, timeout, metadata):
        return b" / ".join(streaming(request, timeout=timeout, metadata=metadata))


def one(number):
    try:
        return "OK " + call(b"call-%d" % number, timeout=30, metadata=metadata).decode()
    except grpc.RpcError as error:
        return "%s %s" % (error.code().name, error.details())


with futures.ThreadPoolExecutor(max_workers=max(count, 1)) as pool:
    for line in pool.map(one, range(count)):
        print(line)
