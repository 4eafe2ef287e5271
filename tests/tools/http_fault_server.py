#!/usr/bin/env python3
"""A broken HTTP store for the bats suites (cache_http.bats).

Usage: http_fault_server.py MODE PORT [FILE]

Listens on 127.0.0.1:PORT.  A GET of any path answers 200 with a
Content-Length of FILE's size (or 4096 when FILE is not given), or 206
with the length of the range asked for ("Range: bytes=A-B" or
"bytes=-N"), and sends the first half of those bytes of FILE (random
bytes without FILE), then:

  cut     closes the connection (a body cut short);
  stall   keeps the connection open and sends nothing more (a stalled body);
  silent  (no response at all: the request is read, nothing is answered).

A PUT is read whole (Content-Length or chunked) and answered 201, so that
the rebuild a client makes after the broken GET is stored without a second
fault; its body is thrown away.  But in mode

  putstall  a GET is 404 (a miss), and a PUT is never read nor answered:
            the client's upload stalls once the socket buffers are full.

And in mode

  noaccept  nothing is ever accepted: the server fills its own accept
            queue (backlog 0) with one connection of its own, so the
            kernel drops every further SYN and a client's connect stalls.
  Every other method gets 405.  With
FAULT_LOG set, "ready" is appended to that file once the server listens,
and then one line per request ("GET /path").

The server runs until it is killed (the suites stop it by PID).
"""

import os
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from fault_common import QuietHandler, RequestLog, serve


def no_accept(port):
    """Listen on PORT, never accept, keep the accept queue full."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(0)
    # The queue holds one connection (backlog 0 + 1): ours.
    mine = socket.create_connection(("127.0.0.1", port), timeout=5)
    log_path = os.environ.get("FAULT_LOG")
    if log_path:
        with open(log_path, "a") as f:
            f.write("ready\n")
    while True:
        time.sleep(3600)
    return mine  # (never reached: keeps the socket referenced)


def main():
    modes = ("cut", "stall", "silent", "putstall", "noaccept")
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in modes:
        sys.stderr.write("usage: http_fault_server.py %s PORT [FILE]\n" % "|".join(modes))
        return 64
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "noaccept":
        return no_accept(port)
    if len(sys.argv) == 4:
        with open(sys.argv[3], "rb") as f:
            body = f.read()
    else:
        body = os.urandom(4096)
    log = RequestLog(os.environ.get("FAULT_LOG"))
    stalled = []  # sockets kept open by "stall" and "silent"

    class Handler(QuietHandler):
        def do_GET(self):
            log("GET " + self.path)
            if mode == "silent":
                self.hold(stalled)
                return
            if mode == "putstall":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            part, first = body, None
            rng = self.headers.get("Range", "")
            if rng.startswith("bytes="):
                a, _, b = rng[len("bytes="):].partition("-")
                if a:
                    first = int(a)
                    last = min(int(b), len(body) - 1) if b else len(body) - 1
                else:
                    first = max(0, len(body) - int(b))
                    last = len(body) - 1
                part = body[first : last + 1]
            self.send_response(200 if first is None else 206)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(part)))
            if first is not None:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (first, first + len(part) - 1, len(body)))
            self.end_headers()
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            if mode == "cut":
                self.hold(stalled, close=True)
            else:
                self.hold(stalled)

        def do_HEAD(self):
            log("HEAD " + self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()

        def do_PUT(self):
            log("PUT " + self.path)
            if mode == "putstall":
                stalled.append(self.connection)
                while True:  # until the client gives up and closes
                    time.sleep(3600)
            self.read_body(keep=False)
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def refuse(self):
            log(self.command + " " + self.path)
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_DELETE = do_PROPFIND = do_POST = do_OPTIONS = refuse

    return serve(Handler, port, log)


if __name__ == "__main__":
    sys.exit(main())
