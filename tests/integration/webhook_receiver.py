#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A webhook receiver for tests/integration/test_webhook.sh: a real HTTP server on 127.0.0.1.

It answers the first POSTs with the statuses given by --answers (e.g. 503,503), then every other
with --default, and appends one JSON line per POST to --record: the status it answered, the
path, the headers and the body (parsed when it is JSON). It binds a free port itself and writes
it to --port-file once it listens, so that no other process can take the port in between. Each
record has the time the POST arrived (epoch seconds). With --tls-cert it serves https.
"""
import argparse
import json
import os
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--answers", default="", help="statuses of the first POSTs, by commas")
    ap.add_argument("--default", type=int, default=200, help="status of every later POST")
    ap.add_argument("--tls-cert", help="serve https with this certificate (PEM, key included)")
    args = ap.parse_args()
    answers = [int(a) for a in args.answers.split(",") if a]
    posts = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length).decode("utf-8", "replace")
            n = posts[0]
            posts[0] += 1
            status = answers[n] if n < len(answers) else args.default
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            with open(args.record, "a") as f:
                f.write(json.dumps({"n": n, "time": time.time(), "status": status,
                                    "path": self.path,
                                    "headers": dict(self.headers.items()), "body": body}) + "\n")
            reply = b"ok\n" if status < 300 else b"refused by the test receiver\n"
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, fmt, *a):
            sys.stderr.write("receiver: " + (fmt % a) + "\n")

    server = HTTPServer(("127.0.0.1", 0), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
