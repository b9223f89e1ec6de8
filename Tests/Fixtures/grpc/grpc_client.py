"""A gRPC client for the tests (Debian's python3-grpcio), on raw bytes. One line per call, in call
order: `OK <each response message, joined by ' / '>` or `<STATUS CODE NAME> <details>`.

    grpc_client.py TARGET METHOD COUNT [AUTHORIZATION] [--ca FILE] [--first BYTES]

By default the channel is h2c (`grpc.insecure_channel`) and takes no proxy from the environment.
With `--ca FILE` it is TLS trusting FILE's certificates, and honours `https_proxy` (grpcio sends
CONNECT to it, then TLS inside the tunnel, offering ALPN h2).

COUNT calls of METHOD (`/test.Echo/Unary` or `/Deadline`; `/Upload`, client-streaming, sends four
16 KiB messages; `/Chat`, bidi-streaming, sends `call-N.0` and `call-N.1` at once, waits for two
answers, then sends `call-N.2`, waits for its answer and ends, the first message padded with dots
to BYTES when `--first` is given; else a server-streaming one), each with a 30 s deadline, run at
once, each with its number as the request; AUTHORIZATION, when given, is sent as the call's own
`authorization` metadata.
"""

import sys
import threading
from concurrent import futures

import grpc

arguments, ca, first = [], None, 0
words = iter(sys.argv[1:])
for word in words:
    if word == "--ca":
        ca = next(words)
    elif word == "--first":
        first = int(next(words))
    else:
        arguments.append(word)
target, method, count = arguments[0], arguments[1], int(arguments[2])
metadata = [("authorization", arguments[3])] if len(arguments) > 3 else None
if ca:
    with open(ca, "rb") as file:
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=file.read()))
else:
    channel = grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)])
if method.endswith("/Unary") or method.endswith("/Deadline"):
    call = channel.unary_unary(method)
elif method.endswith("/Upload"):
    uploading = channel.stream_unary(method)

    def call(request, timeout, metadata):
        return uploading(iter([request.ljust(16384, b".")] * 4), timeout=timeout, metadata=metadata)
elif method.endswith("/Chat"):
    chatting = channel.stream_stream(method)

    def call(request, timeout, metadata):
        answered = threading.Semaphore(0)

        def requests():
            yield (request + b".0").ljust(first, b".")
            yield request + b".1"
            for _ in range(2):
                if not answered.acquire(timeout=timeout):
                    return
            yield request + b".2"
            answered.acquire(timeout=timeout)

        answers = []
        for answer in chatting(requests(), timeout=timeout, metadata=metadata):
            answers.append(answer)
            answered.release()
        return b" / ".join(answers)
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
