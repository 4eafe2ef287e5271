"""What the fault servers of the bats suites share (http_fault_server.py,
s3_fault_server.py): a quiet HTTP/1.1 handler, request bodies read as sent
(Content-Length or chunked), connections held open without an answer, a
request log, and the threaded server on a loopback port."""

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RequestLog:
    """Lines appended to a file (none without a path), one writer at a time."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def __call__(self, line):
        if self.path:
            with self.lock, open(self.path, "a") as f:
                f.write(line + "\n")


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep stderr quiet
        pass

    def read_body(self, keep=True):
        """The request's body (b"" unless keep) and whether it came chunked."""
        body = []
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(body), True
                chunk = self.rfile.read(size + 2)[:size]
                if keep:
                    body.append(chunk)
        left = int(self.headers.get("Content-Length", "0"))
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
            if keep:
                body.append(chunk)
        return b"".join(body), False

    def hold(self, held, close=False):
        """Sends nothing more: closes the connection (close), or keeps it
        (in `held`) until the client closes it or the server is killed."""
        if close:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            held.append(self.connection)
            try:
                while self.connection.recv(65536):
                    pass
            except OSError:
                pass
        self.close_connection = True


def serve(handler, port, log):
    """Serves `handler` on 127.0.0.1:PORT until killed; "ready" is logged once it listens."""
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    log("ready")
    server.serve_forever(poll_interval=0.2)
    return 0
