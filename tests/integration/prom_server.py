#!/usr/bin/env python3
"""Stand-in inference-server endpoints for the serving backend tests.

Stdlib only, loopback only, stops by itself after --lifetime seconds.

GET  /vllm/metrics?seq=K     vllm-1, vllm-2, vllm-3-reset.txt, one per GET (per seq key), then the last
GET  /triton/metrics?seq=K   triton-1, triton-2.txt
GET  /generic/metrics?seq=K  generic-1, generic-2.txt
GET  /hang                   answers only after --hang seconds (the client must time out first)
GET  /500                    HTTP 500
GET  /malformed              200 with a syntax error on line 3
GET  /partial                200, body cut in the middle of a line (no final line feed)
GET  /applied                {"generation": N} of the last document POSTed to /precision
GET  /applied-behind         one generation less than /applied
POST /precision              records the document (record dir: precision-<n>.json), 200
POST /precision-flaky        503 on every other request, 200 (recorded) otherwise
POST /hang                   like GET /hang
GET  /hits?m=POST&p=/hang    how many requests of that method reached that path so far
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SEQUENCES = {
    "/vllm/metrics": ["vllm-1.txt", "vllm-2.txt", "vllm-3-reset.txt"],
    "/triton/metrics": ["triton-1.txt", "triton-2.txt"],
    "/generic/metrics": ["generic-1.txt", "generic-2.txt"],
}

MALFORMED = b"# TYPE a counter\na_total 1\nb{x=\"1\" y=\"2\"} 3\n"


class State:
    def __init__(self, data_dir, record_dir, hang_s):
        self.lock = threading.Lock()
        self.data_dir = data_dir
        self.record_dir = record_dir
        self.hang_s = hang_s
        self.pos = {}
        self.applied = 0
        self.n_posted = 0
        self.flaky = 0
        self.hits = {}

    def hit(self, method, path):
        with self.lock:
            self.hits[(method, path)] = self.hits.get((method, path), 0) + 1


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep ctest output readable
        pass

    def reply(self, code, body, ctype="text/plain; version=0.0.4; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def hang(self):
        time.sleep(self.server.state.hang_s)
        try:
            self.reply(200, b"late 1\n")
        except OSError:  # the client gave up first, as it should
            pass

    def do_GET(self):
        st = self.server.state
        u = urlparse(self.path)
        st.hit("GET", u.path)
        if u.path == "/hits":
            q = parse_qs(u.query)
            key = (q.get("m", ["GET"])[0], q.get("p", [""])[0])
            with st.lock:
                n = st.hits.get(key, 0)
            self.reply(200, b"%d\n" % n)
        elif u.path in SEQUENCES:
            key = (u.path, parse_qs(u.query).get("seq", [""])[0])
            files = SEQUENCES[u.path]
            with st.lock:
                i = st.pos.get(key, 0)
                st.pos[key] = i + 1
            name = files[min(i, len(files) - 1)]
            with open(os.path.join(st.data_dir, name), "rb") as f:
                self.reply(200, f.read())
        elif u.path == "/hang":
            self.hang()
        elif u.path == "/500":
            self.reply(500, b"internal error\n")
        elif u.path == "/malformed":
            self.reply(200, MALFORMED)
        elif u.path == "/partial":
            self.reply(200, b"# TYPE a counter\na_total 1\nb_total{x=\"1")
        elif u.path in ("/applied", "/applied-behind"):
            with st.lock:
                g = st.applied - (1 if u.path == "/applied-behind" and st.applied else 0)
            self.reply(200, json.dumps({"generation": g}).encode(), "application/json")
        else:
            self.reply(404, b"not found\n")

    def record(self, body):
        st = self.server.state
        doc = json.loads(body)
        with st.lock:
            st.n_posted += 1
            st.applied = int(doc["generation"])
            path = os.path.join(st.record_dir, "precision-%d.json" % st.n_posted)
        with open(path + ".tmp", "wb") as f:
            f.write(body)
        os.rename(path + ".tmp", path)

    def do_POST(self):
        st = self.server.state
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        st.hit("POST", self.path)
        if self.path == "/hang":
            self.hang()
            return
        if self.path == "/precision-flaky":
            with st.lock:
                st.flaky += 1
                fail = st.flaky % 2 == 1
            if fail:
                self.reply(503, b"busy\n")
                return
        if self.path in ("/precision", "/precision-flaky"):
            try:
                self.record(body)
            except (ValueError, KeyError):
                self.reply(400, b"bad document\n")
                return
            self.reply(200, b'{"ok": true}\n', "application/json")
            return
        self.reply(404, b"not found\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--hang", type=float, default=3.0)
    ap.add_argument("--lifetime", type=float, default=120.0)
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = State(a.data, a.record, a.hang)
    threading.Timer(a.lifetime, srv.shutdown).start()
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
