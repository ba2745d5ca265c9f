#!/usr/bin/python3
"""A stand-in LLM inference server for the govd serving demo (stdlib only).

It is not a model: an iteration-level simulation of a continuously batching
server (vLLM-like) run in real time, with what govd's `serving` backend
reads and writes:

- GET /metrics: vLLM's Prometheus metrics (names, label sets and bucket bounds
  of vLLM v1, vllm/v1/metrics/loggers.py) plus a router's per-slice counters
  and the precision generation it applied;
- POST /precision: the precision document {"generation", "slices", ...}
  (hal/precision_act.c, `precision: http`); GET /precision returns what is
  applied. With --precision-file the same document is read from a file
  govd's `file` actuator writes (polled);
- shadow-evaluation samples per slice as JSON datagrams
  {"slice": "chat", "samples": 5, "mismatches": 1} to govd's quality socket,
  with a true INT8 mismatch rate per slice (--int8-drop); with --fp8-drop
  the server loads FP8 too (the precision ladder): the document's "low_mode"
  says which slices' 8-bit share is FP8's, and the same samples' FP8
  answers go out as {"slice", "mode": "fp8", "samples", "mismatches"}.

Latency follows load, the INT8 share of the batch (INT8 decode and prefill
are faster) and, with --clock-url, the clock of the simulated device as govd
reports it (govd_clock_hertz), so the governor's clock choice shows in the
latencies it steers. Everything random comes from one seeded generator per
consumer (arrivals, request sizes, routing, evaluator).

Model (times at the max clock, one GPU, an 8B model; rough H200 magnitudes):
  decode step  = (decode_base_ms + decode_per_seq_ms * batch)
                 * (1 - int8_speedup * int8 share of the batch) * (fmax/f)^0.8
  prefill      = prefill_ms_per_token * prompt tokens * (1 - int8_speedup)^[int8]
                 * (fmax/f), added to the step that admits the request
  arrivals     = Poisson, rate * (1 + 0.5 sin(2 pi t / period_s))
"""
import argparse
import json
import math
import os
import random
import signal
import socket
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# vLLM v1 bucket bounds (vllm/v1/metrics/loggers.py)
TTFT_LE = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
           7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL_LE = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
          10.0, 20.0, 40.0, 80.0]
E2E_LE = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
          120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]

# per slice: share of arrivals, mean prompt and output tokens
SLICE_SHAPE = {
    "code": (0.45, 1200, 160),
    "chat": (0.35, 500, 260),
    "math": (0.20, 250, 380),
}
DEFAULT_SHAPE = (0.2, 500, 250)


class Hist:
    def __init__(self, bounds):
        self.le = bounds
        self.counts = [0] * (len(bounds) + 1)  # last: +Inf
        self.sum = 0.0
        self.n = 0

    def observe(self, v, k=1):
        i = 0
        while i < len(self.le) and v > self.le[i]:
            i += 1
        self.counts[i] += k
        self.sum += v * k
        self.n += k

    def lines(self, name, labels):
        out = []
        cum = 0
        for i, b in enumerate(self.le):
            cum += self.counts[i]
            out.append('%s_bucket{%s,le="%s"} %.1f' % (name, labels, repr(float(b)), cum))
        cum += self.counts[-1]
        out.append('%s_bucket{%s,le="+Inf"} %.1f' % (name, labels, cum))
        out.append("%s_count{%s} %.1f" % (name, labels, self.n))
        out.append("%s_sum{%s} %r" % (name, labels, self.sum))
        return out


class Request:
    __slots__ = ("slice", "arrive", "prompt", "out", "int8", "done", "first", "last_tok")

    def __init__(self, sl, arrive, prompt, out, int8):
        self.slice, self.arrive, self.prompt, self.out, self.int8 = sl, arrive, prompt, out, int8
        self.done = 0
        self.first = None
        self.last_tok = None


class Server:
    def __init__(self, a):
        self.a = a
        self.slices = a.slices
        self.lock = threading.Lock()
        base = random.Random(a.seed)
        # one generator per consumer, so a change in one does not shift the others
        self.rng_arrive = random.Random(base.getrandbits(64))
        self.rng_size = random.Random(base.getrandbits(64))
        self.rng_route = random.Random(base.getrandbits(64))
        self.rng_eval = random.Random(base.getrandbits(64))
        self.t0 = time.monotonic()
        self.sim_t = 0.0
        self.next_arrival = self.rng_arrive.expovariate(a.rate)
        self.waiting = []
        self.running = []
        self.ttft = Hist(TTFT_LE)
        self.itl = Hist(ITL_LE)
        self.tpot = Hist(ITL_LE)
        self.e2e = Hist(E2E_LE)
        self.gen_tokens = 0
        self.prompt_tokens = 0
        self.success = {"stop": 0, "length": 0, "abort": 0}
        self.sl_req = {s: 0 for s in self.slices}
        self.sl_int8_req = {s: 0 for s in self.slices}
        self.sl_int8_tok = {s: 0 for s in self.slices}
        self.int8 = {s: 0.0 for s in self.slices}
        self.shadow_ask = {s: 0.0 for s in self.slices}  # govd's floor (document "shadow_rate")
        self.low_mode = {s: "int8" for s in self.slices}  # the document's rung per slice
        self.gen_applied = 0
        self.applied_docs = 0
        self.clock_frac = 1.0  # f / fmax
        self.clock_ok = False
        self.stop = threading.Event()
        self.shares = []
        tot = 0.0
        for s in self.slices:
            tot += SLICE_SHAPE.get(s, DEFAULT_SHAPE)[0]
        acc = 0.0
        for s in self.slices:
            acc += SLICE_SHAPE.get(s, DEFAULT_SHAPE)[0] / tot
            self.shares.append((acc, s))

    # ---- the engine ----
    def rate_at(self, t):
        return self.a.rate * (1 + 0.5 * math.sin(2 * math.pi * t / self.a.period_s))

    def arrive(self, t):
        """Thinning (Lewis-Shedler) over the modulated rate."""
        while self.next_arrival <= t:
            ta = self.next_arrival
            self.next_arrival += self.rng_arrive.expovariate(1.5 * self.a.rate)
            if self.rng_arrive.random() * 1.5 * self.a.rate > self.rate_at(ta):
                continue
            u = self.rng_route.random()
            sl = next(s for acc, s in self.shares if u <= acc or acc == self.shares[-1][0])
            _, mp, mo = SLICE_SHAPE.get(sl, DEFAULT_SHAPE)
            prompt = max(16, int(self.rng_size.expovariate(1.0 / mp)))
            out = max(4, int(self.rng_size.expovariate(1.0 / mo)))
            int8 = self.rng_route.random() < self.int8[sl]
            self.waiting.append(Request(sl, ta, prompt, out, int8))
            self.sl_req[sl] += 1
            if int8:
                self.sl_int8_req[sl] += 1

    def step(self):
        """One engine iteration at self.sim_t; returns its duration (s) or None when idle."""
        a = self.a
        fr = max(0.05, min(1.0, self.clock_frac))
        admitted = []
        while self.waiting and len(self.running) < a.max_batch:
            admitted.append(self.waiting.pop(0))
        self.running.extend(admitted)
        if not self.running:
            return None
        b = len(self.running)
        share8 = sum(1 for r in self.running if r.int8) / b
        dt_ms = (a.decode_base_ms + a.decode_per_seq_ms * b) * (1 - a.int8_speedup * share8)
        dt_ms *= (1.0 / fr) ** 0.8
        for r in admitted:
            p = a.prefill_ms_per_token * r.prompt * (1 - a.int8_speedup if r.int8 else 1.0)
            dt_ms += p / fr
            self.prompt_tokens += r.prompt
        dt = dt_ms / 1000.0
        t_end = self.sim_t + dt
        keep = []
        for r in self.running:
            r.done += 1
            self.gen_tokens += 1
            if r.int8:
                self.sl_int8_tok[r.slice] += 1
            if r.first is None:
                r.first = t_end
                self.ttft.observe(t_end - r.arrive)
            else:
                self.itl.observe(t_end - r.last_tok)
            r.last_tok = t_end
            if r.done >= r.out:
                self.e2e.observe(t_end - r.arrive)
                if r.out > 1:
                    self.tpot.observe((t_end - r.first) / (r.out - 1))
                self.success["length" if r.out >= a.max_tokens else "stop"] += 1
            else:
                keep.append(r)
        self.running = keep
        return dt

    def engine(self):
        while not self.stop.is_set():
            now = time.monotonic() - self.t0
            with self.lock:
                # catch up with real time, iteration by iteration
                while self.sim_t < now:
                    self.arrive(self.sim_t)
                    dt = self.step()
                    if dt is None:  # idle until the next arrival
                        self.sim_t = max(self.sim_t, min(now, self.next_arrival))
                        if self.next_arrival > now:
                            break
                    else:
                        self.sim_t += dt
            self.stop.wait(0.01)

    # ---- precision ----
    def apply(self, doc, src):
        """Validates and applies a precision document; (status, message)."""
        if not isinstance(doc, dict):
            return 400, "not a JSON object"
        g, sl = doc.get("generation"), doc.get("slices")
        if not isinstance(g, int) or isinstance(g, bool) or g < 0 or not isinstance(sl, dict):
            return 400, "needs an integer generation and a slices object"
        def share(v):
            return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1

        def mode(v):
            return v == "int8" or (v == "fp8" and bool(self.a.fp8_drop))

        lm, ask = doc.get("low_mode", {}), doc.get("shadow_rate", {})
        for key, m, ok, what in (("slices", sl, share, "INT8 share must be in [0, 1]"),
                                 ("low_mode", lm, mode, "is not a loaded 8-bit mode"),
                                 ("shadow_rate", ask, share, "must be in [0, 1]")):
            if not isinstance(m, dict):
                return 400, "%s must be an object" % key
            for k, v in m.items():
                if k not in self.int8:
                    return 400, "%s: unknown slice %r" % (key, k)
                if not ok(v):
                    return 400, "%s %r: %r %s" % (key, k, v, what)
        if self.a.apply_delay_ms:
            time.sleep(self.a.apply_delay_ms / 1000.0)  # engines switching
        with self.lock:
            if g < self.gen_applied:
                return 409, "generation %d is older than the applied %d" % (g, self.gen_applied)
            for k, v in sl.items():
                self.int8[k] = float(v)
            # a document without a slice's rate asks nothing there; its
            # rung says what an asked sample scores (the evaluator below)
            self.shadow_ask = {k: float(ask.get(k, 0.0)) for k in self.int8}
            for k, v in lm.items():
                self.low_mode[k] = v
            self.gen_applied = g
            self.applied_docs += 1
            rec = {"t_s": round(time.monotonic() - self.t0, 3), "via": src, "generation": g,
                   "slices": dict(self.int8)}
            if ask:
                rec["shadow_rate"] = dict(ask)
            if lm:
                rec["low_mode"] = dict(lm)
        if self.a.applied_log:
            with open(self.a.applied_log, "a") as f:
                f.write(json.dumps(rec, sort_keys=True) + "\n")
        log("applied generation %d via %s: %s" % (g, src, ", ".join(
            "%s %.2f" % (k, v) for k, v in rec["slices"].items())))
        return 200, "applied"

    def watch_file(self):
        path, seen = self.a.precision_file, None
        while not self.stop.wait(0.2):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if key == seen:
                continue
            seen = key
            try:
                with open(path) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                log("precision file %s: %s" % (path, e))
                continue
            code, msg = self.apply(doc, "file")
            if code != 200:
                log("precision file %s: %s" % (path, msg))

    def watch_haproxy(self):
        """--router haproxy: the share in force per slice is what HAProxy's
        weights send to the low-precision server (backend be_<slice>,
        servers bf16 and fp8), read from its stats socket like govd does."""
        last = None
        while not self.stop.wait(0.2):
            try:
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.settimeout(1.0)
                c.connect(self.a.haproxy_socket)
                c.sendall(b"show servers state\n")
                d = b""
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    d += b
                c.close()
                lines = d.decode().splitlines()
                cols = lines[1].split()[1:]
                w = {}
                for l in lines[2:]:
                    f = l.split()
                    if len(f) == len(cols):
                        w[(f[cols.index("be_name")], f[cols.index("srv_name")])] = int(
                            f[cols.index("srv_uweight")])
            except (OSError, ValueError, IndexError) as e:
                log("haproxy %s: %s" % (self.a.haproxy_socket, e))
                continue
            with self.lock:
                for sl in self.slices:
                    hi, lo = w.get(("be_" + sl, "bf16"), 1), w.get(("be_" + sl, "fp8"), 0)
                    self.int8[sl] = lo / float(hi + lo) if hi + lo else 0.0
                now = dict(self.int8)
            if now != last:
                last = now
                log("haproxy weights: " + ", ".join("%s %.2f" % kv for kv in now.items()))

    # ---- shadow evaluator ----
    def evaluator(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        every = 0.5
        seen = dict(self.sl_req)
        while not self.stop.wait(every):
            with self.lock:
                done = {sl: self.sl_req[sl] - seen[sl] for sl in self.slices}
                seen = dict(self.sl_req)
                ask = dict(self.shadow_ask)
                share_now = dict(self.int8)
            for sl in self.slices:
                n = poisson(self.rng_eval, self.a.shadow_per_s * every)
                # govd's ask is a floor on the share of this slice's requests
                asked = sum(1 for _ in range(done[sl]) if self.rng_eval.random() < ask[sl]) \
                    if ask[sl] > 0 else 0
                extra = max(0, asked - n)
                if n + extra == 0:
                    continue
                # The own evaluator scores both 8-bit answers; an asked sample
                # only where the slice's next decision lies: served in BF16,
                # its rung; served in FP8, FP8 and INT8; in INT8, INT8
                # (docs/serving-integration.md, "shadow_rate").
                fp8_rung = bool(self.a.fp8_drop) and self.low_mode.get(sl) == "fp8"
                serving = share_now[sl] > 0
                ex8 = extra if (serving or not fp8_rung) else 0
                exf = extra if fp8_rung else 0
                # one draw per sample scores both 8-bit answers: a prompt FP8
                # gets wrong is one INT8 gets wrong where INT8's drop is larger
                u = [self.rng_eval.random() for _ in range(n + extra)]
                msgs = []
                if n + ex8:
                    msgs.append({"slice": sl, "samples": n + ex8,
                                 "mismatches": sum(1 for x in u[:n + ex8]
                                                   if x < self.a.int8_drop.get(sl, 0))})
                if self.a.fp8_drop and n + exf:
                    uf = u[:n] + u[n + extra - exf:]
                    msgs.append({"slice": sl, "mode": "fp8", "samples": n + exf,
                                 "mismatches": sum(1 for x in uf
                                                   if x < self.a.fp8_drop.get(sl, 0))})
                for m in msgs:
                    try:
                        s.sendto(json.dumps(m).encode(), self.a.quality_socket)
                    except OSError:
                        pass  # govd not up (yet): an evaluator's samples are lost, as in production

    # ---- the device clock, from govd's metrics ----
    def clock_poll(self):
        want = 'govd_clock_hertz{device="%s"}' % self.a.clock_device
        while not self.stop.wait(0.25):
            try:
                with urllib.request.urlopen(self.a.clock_url, timeout=0.5) as r:
                    text = r.read().decode()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith(want):
                    try:
                        hz = float(line.split()[-1])
                    except ValueError:
                        break
                    if hz > 0:
                        with self.lock:
                            self.clock_frac = hz / (self.a.clock_max_mhz * 1e6)
                            self.clock_ok = True
                    break

    # ---- exposition ----
    def metrics(self):
        m = self.a.model
        lab = 'engine="0",model_name="%s"' % m
        L = []

        def fam(name, typ, help_):
            L.append("# HELP %s %s" % (name, help_))
            L.append("# TYPE %s %s" % (name, typ))

        with self.lock:
            fam("vllm:num_requests_running", "gauge",
                "Number of requests in model execution batches.")
            L.append("vllm:num_requests_running{%s} %.1f" % (lab, len(self.running)))
            fam("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.")
            L.append("vllm:num_requests_waiting{%s} %.1f" % (lab, len(self.waiting)))
            fam("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.")
            L.append("vllm:prompt_tokens_total{%s} %.1f" % (lab, self.prompt_tokens))
            fam("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.")
            L.append("vllm:generation_tokens_total{%s} %.1f" % (lab, self.gen_tokens))
            fam("vllm:request_success_total", "counter", "Count of successfully processed requests.")
            for reason in ("abort", "length", "stop"):
                L.append('vllm:request_success_total{%s,finished_reason="%s"} %.1f'
                         % (lab, reason, self.success[reason]))
            fam("vllm:time_to_first_token_seconds", "histogram",
                "Histogram of time to first token in seconds.")
            L += self.ttft.lines("vllm:time_to_first_token_seconds", lab)
            fam("vllm:time_per_output_token_seconds", "histogram",
                "Histogram of time per output token in seconds."
                "DEPRECATED: Use vllm:inter_token_latency_seconds instead.")
            L += self.tpot.lines("vllm:time_per_output_token_seconds", lab)
            fam("vllm:inter_token_latency_seconds", "histogram",
                "Histogram of inter-token latency in seconds.")
            L += self.itl.lines("vllm:inter_token_latency_seconds", lab)
            fam("vllm:e2e_request_latency_seconds", "histogram",
                "Histogram of e2e request latency in seconds.")
            L += self.e2e.lines("vllm:e2e_request_latency_seconds", lab)
            # the router in front of the engines: per slice, and the precision it applied
            fam("router_requests_total", "counter", "Requests routed, by slice.")
            for s in self.slices:
                L.append('router_requests_total{model_name="%s",slice="%s"} %.1f' % (m, s, self.sl_req[s]))
            fam("router_int8_requests_total", "counter", "Requests routed to the INT8 engine, by slice.")
            for s in self.slices:
                L.append('router_int8_requests_total{model_name="%s",slice="%s"} %.1f'
                         % (m, s, self.sl_int8_req[s]))
            fam("router_int8_generation_tokens_total", "counter",
                "Tokens generated by the INT8 engine, by slice.")
            for s in self.slices:
                L.append('router_int8_generation_tokens_total{model_name="%s",slice="%s"} %.1f'
                         % (m, s, self.sl_int8_tok[s]))
            fam("router_precision_int8_share", "gauge", "INT8 share per slice in force.")
            for s in self.slices:
                L.append('router_precision_int8_share{model_name="%s",slice="%s"} %r' % (m, s, self.int8[s]))
            fam("router_precision_generation", "gauge",
                "Generation of the precision document applied (0: none).")
            L.append('router_precision_generation{model_name="%s"} %.1f' % (m, self.gen_applied))
            fam("standin_clock_ratio", "gauge", "Device clock over its max, as the latency model uses it.")
            L.append('standin_clock_ratio{model_name="%s"} %r' % (m, self.clock_frac))
        return "\n".join(L) + "\n"

    def precision_json(self):
        with self.lock:
            return json.dumps({"generation": self.gen_applied, "slices": dict(self.int8)})


def poisson(rng, lam):
    """Knuth's method: lam is small here (samples per evaluator tick)."""
    lim, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= lim:
            return k
        k += 1


def log(msg):
    sys.stderr.write("standin: %s\n" % msg)
    sys.stderr.flush()


def make_handler(srv):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def send(self, code, body, ctype):
            b = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            if self.path == "/metrics":
                self.send(200, srv.metrics(), "text/plain; version=0.0.4; charset=utf-8")
            elif self.path == "/precision":
                self.send(200, srv.precision_json() + "\n", "application/json")
            else:
                self.send(404, "not found\n", "text/plain")

        def do_POST(self):
            if self.path != "/precision":
                self.send(404, "not found\n", "text/plain")
                return
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if 0 < n <= 65536 else b""
            try:
                doc = json.loads(body)
            except ValueError:
                self.send(400, "not JSON\n", "text/plain")
                return
            code, msg = srv.apply(doc, "http")
            self.send(code, json.dumps({"status": msg, "generation": srv.gen_applied}) + "\n",
                      "application/json")

    return H


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0: a free port (see --port-file)")
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--model", default="meta-llama/Llama-3.1-8B-Instruct")
    p.add_argument("--slices", default="code,chat,math")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=float, default=6.0, help="mean arrivals per second")
    p.add_argument("--period-s", type=float, default=40.0, help="period of the load wave")
    p.add_argument("--max-batch", type=int, default=64)
    p.add_argument("--max-tokens", type=int, default=2048)
    p.add_argument("--decode-base-ms", type=float, default=14.0)
    p.add_argument("--decode-per-seq-ms", type=float, default=0.35)
    p.add_argument("--prefill-ms-per-token", type=float, default=0.02)
    p.add_argument("--int8-speedup", type=float, default=0.35,
                   help="INT8 time saved: decode per INT8 share of the batch, prefill per request")
    p.add_argument("--int8-drop", default="code=0.002,chat=0.08,math=0.02",
                   help="true INT8 mismatch rate per slice (the evaluator samples it)")
    p.add_argument("--fp8-drop", default="",
                   help="true FP8 mismatch rate per slice: FP8 is loaded (the precision ladder)")
    p.add_argument("--quality-socket", help="govd's quality datagram socket")
    p.add_argument("--shadow-per-s", type=float, default=10.0,
                   help="shadow evaluations per second and slice")
    p.add_argument("--precision-file", help="also watch this precision document (file actuator)")
    p.add_argument("--haproxy-socket",
                   help="the low-precision share per slice is HAProxy's weights (be_<slice>: bf16, fp8)")
    p.add_argument("--apply-delay-ms", type=int, default=0,
                   help="delay before a document takes effect")
    p.add_argument("--applied-log", help="append every applied document here (JSON lines)")
    p.add_argument("--clock-url", help="govd's metrics URL, for the device clock")
    p.add_argument("--clock-device", default="gpu0")
    p.add_argument("--clock-max-mhz", type=float, default=1980.0)
    p.add_argument("--lifetime", type=float, default=0, help="stop after this many seconds (0: never)")
    a = p.parse_args()
    a.slices = [s for s in a.slices.split(",") if s]
    for key in ("int8_drop", "fp8_drop"):
        drops = {}
        for kv in getattr(a, key).split(","):
            if kv:
                k, _, v = kv.partition("=")
                drops[k] = float(v)
        setattr(a, key, drops)

    srv = Server(a)
    httpd = ThreadingHTTPServer((a.host, a.port), make_handler(srv))
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    threads = [srv.engine]
    if a.quality_socket:
        threads.append(srv.evaluator)
    if a.precision_file:
        threads.append(srv.watch_file)
    if a.clock_url:
        threads.append(srv.clock_poll)
    if a.haproxy_socket:
        threads.append(srv.watch_haproxy)
    for fn in threads:
        threading.Thread(target=fn, daemon=True).start()

    def stop(*_):
        srv.stop.set()
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if a.lifetime > 0:
        timer = threading.Timer(a.lifetime, stop)
        timer.daemon = True  # must not hold the exit after a SIGTERM
        timer.start()
    log("listening on http://%s:%d (metrics /metrics, precision POST /precision), slices %s"
        % (a.host, port, ",".join(a.slices)))
    httpd.serve_forever(poll_interval=0.2)
    httpd.server_close()
    log("stopped after %.1f s: %d requests finished, precision generation %d applied"
        % (time.monotonic() - srv.t0, sum(srv.success.values()), srv.gen_applied))


if __name__ == "__main__":
    main()
