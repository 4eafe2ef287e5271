#!/usr/bin/env python3
"""A faulty S3 server for the bats suites: a proxy in front of the real test
server (s3_server.js) that breaks the requests a test asks it to.

Usage: s3_fault_server.py PORT CONTROL [UPSTREAM_PORT]

Listens on 127.0.0.1:PORT and forwards every request as it came (its Host
header too, so the upstream checks the client's signature) to
127.0.0.1:UPSTREAM_PORT; without an upstream, a request that is let through
gets 404 NoSuchKey.  The file CONTROL, read at every request, says which
requests to break and how, in one line:

  MODE [METHOD [COUNT]]

METHOD (GET, PUT, POST, DELETE, HEAD or ANY, the default) picks the requests;
COUNT of them (default: all) are broken, counted from when the line last
changed; the others pass.  A missing or empty file is "pass".  MODE is one of

  pass       forward (no fault);
  e500       500 InternalError, in S3's XML;
  slowdown   503 SlowDown, in S3's XML;
  stall      the request is read; a GET then gets the upstream's headers and
             half its body, anything else no answer at all; then nothing more
             is sent, the connection held open (until the client gives up);
  cut        likewise, but the connection is then closed (a body cut short,
             an upload answered by a closed connection);
  denied     403 AccessDenied, as S3 answers a GET of a missing key to a
             policy without s3:ListBucket;
  skewed     403 RequestTimeTooSkewed, as S3 answers a request signed by a
             machine whose clock is more than 15 minutes off;
  nochunk    a PUT sent with Transfer-Encoding: chunked gets 501
             NotImplemented, as S3 answers it (any other request passes).

One line per request is appended to LOG (CONTROL + ".log"): "METHOD TARGET
STATUS" with STATUS the status sent, or "stall"/"cut".  "ready" is appended
once the server listens.  It runs until it is killed (by PID).
"""

import http.client
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from fault_common import QuietHandler, RequestLog, serve

MODES = ("pass", "e500", "slowdown", "denied", "skewed", "stall", "cut", "nochunk")
ERRORS = {
    "e500": (500, "InternalError", "We encountered an internal error. Please try again."),
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "denied": (403, "AccessDenied", "Access Denied"),
    "skewed": (
        403,
        "RequestTimeTooSkewed",
        "The difference between the request time and the current time is too large.",
    ),
    "nochunk": (501, "NotImplemented", "A header you provided implies functionality that is not implemented"),
}


class Control:
    """The CONTROL file's line, and how many faults it still asks for."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.line = None
        self.left = None  # None: every matching request

    def fault_for(self, method):
        try:
            with open(self.path) as f:
                line = f.read().strip()
        except OSError:
            line = ""
        with self.lock:
            if line != self.line:
                self.line = line
                words = line.split()
                self.left = int(words[2]) if len(words) > 2 else None
            words = (line or "pass").split()
            mode = words[0] if words[0] in MODES else "pass"
            target = words[1].upper() if len(words) > 1 else "ANY"
            if mode == "pass" or target not in ("ANY", method):
                return "pass"
            if self.left is not None:
                if self.left <= 0:
                    return "pass"
                self.left -= 1
            return mode


def main():
    if len(sys.argv) not in (3, 4):
        sys.stderr.write("usage: s3_fault_server.py PORT CONTROL [UPSTREAM_PORT]\n")
        return 64
    port, control = int(sys.argv[1]), Control(sys.argv[2])
    upstream = int(sys.argv[3]) if len(sys.argv) == 4 else None
    log = RequestLog(sys.argv[2] + ".log")
    held = []  # connections kept open by "stall"

    class Handler(QuietHandler):
        def send_head(self, status, headers, length):
            """The status line, the upstream's headers but those of the transfer, and LENGTH."""
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()

        def answer(self, status, headers, body):
            length = len(body)
            if self.command == "HEAD":  # the length of what a GET would get
                length = next((v for k, v in headers if k.lower() == "content-length"), length)
            self.send_head(status, headers, length)
            if self.command != "HEAD":
                self.wfile.write(body)
            log("%s %s %s" % (self.command, self.path, status))

        def s3_error(self, status, code, message):
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>"
                   "<RequestId>fault</RequestId></Error>" % (code, message)).encode()
            self.answer(status, [("Content-Type", "application/xml")], xml)

        def forward(self, body, chunked):
            if upstream is None:
                self.s3_error(404, "NoSuchKey", "The specified key does not exist.")
                return None
            conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection")}
            if chunked or body:
                headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body if body or chunked else None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            return resp.status, resp.getheaders(), data

        def broken(self, mode, body, chunked):
            """stall or cut: half a GET's body, no answer to anything else."""
            if self.command == "GET":
                got = self.forward(body, chunked)
                if got is None:
                    return
                status, headers, data = got
                self.send_head(status, headers, len(data))
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
            log("%s %s %s" % (self.command, self.path, mode))
            self.hold(held, close=mode == "cut")

        def handle_any(self):
            body, chunked = self.read_body()
            mode = control.fault_for(self.command)
            if mode == "nochunk" and not (self.command == "PUT" and chunked):
                mode = "pass"
            if mode in ERRORS:
                self.s3_error(*ERRORS[mode])
            elif mode in ("stall", "cut"):
                self.broken(mode, body, chunked)
            else:
                got = self.forward(body, chunked)
                if got is not None:
                    self.answer(*got)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

    return serve(Handler, port, log)


if __name__ == "__main__":
    sys.exit(main())
