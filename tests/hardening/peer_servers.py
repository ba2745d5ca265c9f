#!/usr/bin/python3
"""Peers for the hardening tests (tests/hardening/peer_*.c), loopback only,
each on a free port it writes to PORTFILE, each stopping by itself after
--lifetime seconds.

  http DIR          serves DIR's files (stdlib http.server): crafted scrapes
  modbus-drip MS    a Modbus TCP meter (raw socket, function 3/4) that sends
                    its reply one byte every MS milliseconds (0: in one burst);
                    values of an SDM630-shaped map (configs/meters/eastron-sdm630.yaml)
"""
import argparse
import functools
import http.server
import os
import socket
import struct
import sys
import threading
import time

# Protocol addresses of configs/meters/eastron-sdm630.yaml and plausible values.
VALUES = {0x0000: 230.0, 0x0030: 2.0, 0x0034: 460.0, 0x0046: 50.0, 0x0048: 1234.5}


def write_port(path, port):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.rename(tmp, path)


def serve_http(args):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    handler = functools.partial(Quiet, directory=args.arg)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    write_port(args.port_file, srv.server_address[1])
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    time.sleep(args.lifetime)


def registers(addr, count):
    out = []
    a = addr
    while len(out) < count:
        if a in VALUES:
            hi, lo = struct.unpack(">HH", struct.pack(">f", VALUES[a]))
            out += [hi, lo]
            a += 2
        else:
            out.append(0)
            a += 1
    return out[:count]


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk:
            return None
        b += chunk
    return b


def modbus_client(c, drip_s):
    try:
        while True:
            req = recv_exact(c, 12)
            if req is None:
                return
            tid, _proto, _len, unit, fn, addr, count = struct.unpack(">HHHBBHH", req)
            regs = registers(addr, count)
            pdu = struct.pack(">BB", fn, 2 * count) + b"".join(struct.pack(">H", r) for r in regs)
            reply = struct.pack(">HHHB", tid, 0, len(pdu) + 1, unit) + pdu
            if drip_s <= 0:
                c.sendall(reply)
                continue
            for i in range(len(reply)):
                c.sendall(reply[i:i + 1])
                time.sleep(drip_s)
    except OSError:
        pass
    finally:
        c.close()


def serve_modbus(args):
    drip_s = float(args.arg) / 1000.0
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    write_port(args.port_file, s.getsockname()[1])
    s.settimeout(0.2)
    end = time.monotonic() + args.lifetime
    while time.monotonic() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=modbus_client, args=(c, drip_s), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["http", "modbus-drip"])
    ap.add_argument("arg")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    args = ap.parse_args()
    {"http": serve_http, "modbus-drip": serve_modbus}[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
