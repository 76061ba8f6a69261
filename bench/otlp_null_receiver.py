#!/usr/bin/python3
"""otlp_null_receiver.py PORT - an OTLP/HTTP endpoint for benchmarks: it
answers every POST with 200 and an empty Export*ServiceResponse at once,
and counts requests and bytes (printed on SIGTERM), so the exporter, not
the receiver, is what a benchmark measures. Tests use the reference
receiver (../shared/tools/otlp-sink) instead, which decodes everything."""
import http.server
import signal
import sys

count = {"requests": 0, "bytes": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        count["requests"] += 1
        count["bytes"] += n
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def bye(*_):
    print("requests=%d bytes=%d" % (count["requests"], count["bytes"]), flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, bye)
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("ready", flush=True)
srv.serve_forever()
