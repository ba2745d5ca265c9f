#!/usr/bin/env python3
"""Writes the reconstructed fixtures of this folder (see README.md): each
server's metric names, types, labels and bucket bounds as its sources give
them, with counts chosen so the windows between scrape a and b have
hand-checkable quantiles. sglang-doc.txt is not written here: it is SGLang's
documented example as published. Run from anywhere; rewrites the files."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# vLLM v1 bucket bounds (vllm/v1/metrics/loggers.py)
V1_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
           10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
V1_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
          20.0, 40.0, 80.0]
V1_REQ = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
          240.0, 480.0, 960.0, 1920.0, 7680.0]
# vLLM V0 (0.6 - 0.8, vllm/engine/metrics.py): TTFT stops at 10 s
V0_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]
V0_TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5]
V0_REQ = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0]
# SGLang (python/sglang/srt/metrics/collector.py), the smaller bounds of each list
SG_TTFT = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
SG_ITL = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
          0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000]
SG_E2E = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800]
SG_QUEUE = [0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60]
# Triton's default first-response bounds (ms)
TR_FIRST = [100, 500, 2000, 5000]


def fmt(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return "%.1f" % v
    return repr(v) if isinstance(v, float) else "%d" % v


def le_str(b):
    return fmt(float(b))


def hist(name, help_, labels, bounds, adds, total_sum):
    """adds: {upper bound: count in that bucket}; an add above the last
    bound goes to +Inf."""
    for k in adds:
        assert k == "+Inf" or k in bounds, (name, k)
    out = ["# HELP %s %s" % (name, help_), "# TYPE %s histogram" % name]
    lab = ",".join('%s="%s"' % kv for kv in labels)
    out.append("%s_sum{%s} %s" % (name, lab, fmt(float(total_sum))))
    cum = 0
    for b in bounds:
        cum += adds.get(b, 0)
        out.append('%s_bucket{%s,le="%s"} %s' % (name, lab, le_str(b), fmt(float(cum))))
    cum += adds.get("+Inf", 0)
    out.append('%s_bucket{%s,le="+Inf"} %s' % (name, lab, fmt(float(cum))))
    out.append("%s_count{%s} %s" % (name, lab, fmt(float(cum))))
    return out


def scalar(name, typ, help_, labels, value):
    lab = ",".join('%s="%s"' % kv for kv in labels)
    return ["# HELP %s %s" % (name, help_), "# TYPE %s %s" % (name, typ),
            "%s{%s} %s" % (name, lab, fmt(float(value)))]


def add(a, b):
    r = dict(a)
    for k, v in b.items():
        r[k] = r.get(k, 0) + v
    return r


def write(fname, lines):
    with open(os.path.join(HERE, fname), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- vLLM v0.12 and later: current names, labels model_name and engine ----
def vllm_v1(fname, lab, st):
    L = []
    L += scalar("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", lab, st["run"])
    L += scalar("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", lab, st["wait"])
    L += scalar("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", lab, st["kv"])
    L += scalar("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", lab, st["tok"])
    L += ["# HELP vllm:request_success_total Count of successfully processed requests.",
          "# TYPE vllm:request_success_total counter"]
    labs = ",".join('%s="%s"' % kv for kv in lab)
    L.append('vllm:request_success_total{%s,finished_reason="stop"} %s' % (labs, fmt(float(st["req"] - st["req"] // 4))))
    L.append('vllm:request_success_total{%s,finished_reason="length"} %s' % (labs, fmt(float(st["req"] // 4))))
    L.append('vllm:request_success_total{%s,finished_reason="abort"} 0.0' % labs)
    L += hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lab, V1_TTFT, st["ttft"], st["ttft_sum"])
    L += hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lab, V1_ITL, st["itl"], st["itl_sum"])
    L += hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", lab, V1_REQ, st["e2e"], st["e2e_sum"])
    L += hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", lab, V1_REQ, st["queue"], st["queue_sum"])
    write(fname, L)


def vllm_v0(fname, lab, st):
    L = []
    L += scalar("vllm:num_requests_running", "gauge", "Number of requests currently running on GPU.", lab, st["run"])
    L += scalar("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", lab, st["wait"])
    L += scalar("vllm:num_requests_swapped", "gauge", "Number of requests swapped to CPU.", lab, 0)
    L += scalar("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.", lab, st["kv"])
    L += scalar("vllm:cpu_cache_usage_perc", "gauge", "CPU KV-cache usage. 1 means 100 percent usage.", lab, 0)
    L += scalar("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", lab, st["tok"])
    L += ["# HELP vllm:request_success_total Count of successfully processed requests.",
          "# TYPE vllm:request_success_total counter"]
    labs = ",".join('%s="%s"' % kv for kv in lab)
    L.append('vllm:request_success_total{finished_reason="stop",%s} %s' % (labs, fmt(float(st["req"]))))
    L += hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lab, V0_TTFT, st["ttft"], st["ttft_sum"])
    L += hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", lab, V0_TPOT, st["itl"], st["itl_sum"])
    L += hist("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", lab, V0_REQ, st["e2e"], st["e2e_sum"])
    L += hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", lab, V0_REQ, st["queue"], st["queue_sum"])
    write(fname, L)


LAB12 = [("engine", "0"), ("model_name", "llama-8b")]
base = dict(run=2, wait=0, kv=0.10, tok=20000, req=140,
            ttft={0.02: 13, 0.04: 84, 0.06: 26, 0.08: 15, 0.1: 2}, ttft_sum=6.5,
            itl={0.025: 900, 0.05: 600, 0.075: 100}, itl_sum=48.0,
            e2e={1.0: 40, 1.5: 60, 2.0: 40}, e2e_sum=210.0,
            queue={0.3: 130, 0.5: 10}, queue_sum=14.0)
win = dict(ttft={0.04: 10, 0.06: 20, 0.08: 30, 0.1: 20, 0.25: 15, 0.5: 5},
           itl={0.025: 200, 0.05: 400, 0.075: 200, 0.1: 100, 0.15: 50, 0.2: 30, 0.3: 15, 0.4: 5},
           e2e={0.8: 10, 1.0: 20, 1.5: 30, 2.0: 20, 2.5: 10, 5.0: 5, 10.0: 5},
           queue={0.3: 80, 0.5: 10, 0.8: 5, 1.0: 3, 1.5: 2})
b = dict(base, run=8, wait=3, kv=0.42, tok=30000, req=240,
         ttft=add(base["ttft"], win["ttft"]), ttft_sum=base["ttft_sum"] + 12.0,
         itl=add(base["itl"], win["itl"]), itl_sum=base["itl_sum"] + 70.0,
         e2e=add(base["e2e"], win["e2e"]), e2e_sum=base["e2e_sum"] + 210.0,
         queue=add(base["queue"], win["queue"]), queue_sum=base["queue_sum"] + 30.0)
vllm_v1("vllm-v0.12-a.txt", LAB12, base)
vllm_v1("vllm-v0.12-b.txt", LAB12, b)

# the FP8 replica of the same model (v0.12, same bounds): 100 requests in the window
fbase = dict(run=1, wait=0, kv=0.05, tok=5000, req=50,
             ttft={0.02: 50}, ttft_sum=0.5, itl={0.01: 500}, itl_sum=4.0,
             e2e={0.8: 50}, e2e_sum=35.0, queue={0.3: 50}, queue_sum=2.0)
fwin = dict(ttft={0.02: 40, 0.04: 40, 0.06: 20}, itl={0.01: 600, 0.025: 300, 0.05: 100},
            e2e={0.5: 20, 0.8: 60, 1.0: 20}, queue={0.3: 100})
fb = dict(fbase, run=6, wait=1, kv=0.61, tok=12000, req=150,
          ttft=add(fbase["ttft"], fwin["ttft"]), ttft_sum=fbase["ttft_sum"] + 3.2,
          itl=add(fbase["itl"], fwin["itl"]), itl_sum=fbase["itl_sum"] + 12.0,
          e2e=add(fbase["e2e"], fwin["e2e"]), e2e_sum=fbase["e2e_sum"] + 70.0,
          queue=add(fbase["queue"], fwin["queue"]), queue_sum=fbase["queue_sum"] + 5.0)
LABFP8 = [("engine", "0"), ("model_name", "llama-8b")]
vllm_v1("vllm-fp8-v0.12-a.txt", LABFP8, fbase)
vllm_v1("vllm-fp8-v0.12-b.txt", LABFP8, fb)
# the FP8 replica restarted after b: everything from zero, 10 requests since
frs = dict(run=1, wait=0, kv=0.02, tok=800, req=10,
           ttft={0.02: 10}, ttft_sum=0.1, itl={0.01: 80}, itl_sum=0.6,
           e2e={0.8: 10}, e2e_sum=7.0, queue={0.3: 10}, queue_sum=0.4)
vllm_v1("vllm-fp8-v0.12-c-restarted.txt", LABFP8, frs)
# and the BF16 one carried on: 20 more requests
bc = dict(b, run=4, wait=0, kv=0.30, tok=32000, req=260,
          ttft=add(b["ttft"], {0.1: 20}), ttft_sum=b["ttft_sum"] + 1.8,
          itl=add(b["itl"], {0.05: 100}), itl_sum=b["itl_sum"] + 4.0,
          e2e=add(b["e2e"], {1.5: 20}), e2e_sum=b["e2e_sum"] + 26.0,
          queue=add(b["queue"], {0.3: 20}), queue_sum=b["queue_sum"] + 2.0)
vllm_v1("vllm-v0.12-c.txt", LAB12, bc)

# ---- vLLM V0 (0.6 - 0.8): the old names, label model_name only ----
LAB0 = [("model_name", "llama-8b")]
obase = dict(run=3, wait=1, kv=0.20, tok=9000, req=60,
             ttft={0.1: 30, 0.25: 30}, ttft_sum=9.0, itl={0.05: 2000}, itl_sum=80.0,
             e2e={2.5: 60}, e2e_sum=120.0, queue={1.0: 60}, queue_sum=3.0)
owin = dict(ttft={0.25: 50, 0.5: 30, 1.0: 20}, itl={0.05: 500, 0.075: 400, 0.1: 100},
            e2e={2.5: 50, 5.0: 40, 10.0: 10}, queue={1.0: 90, 2.5: 10})
ob = dict(obase, run=7, wait=5, kv=0.83, tok=15000, req=160,
          ttft=add(obase["ttft"], owin["ttft"]), ttft_sum=obase["ttft_sum"] + 40.0,
          itl=add(obase["itl"], owin["itl"]), itl_sum=obase["itl_sum"] + 55.0,
          e2e=add(obase["e2e"], owin["e2e"]), e2e_sum=obase["e2e_sum"] + 400.0,
          queue=add(obase["queue"], owin["queue"]), queue_sum=obase["queue_sum"] + 60.0)
vllm_v0("vllm-v0.8-a.txt", LAB0, obase)
vllm_v0("vllm-v0.8-b.txt", LAB0, ob)


# ---- SGLang, current names (inter_token_latency, queue_time, num_requests_total) ----
def sglang(fname, st):
    lab = [("model_name", "meta-llama/Llama-3.1-8B-Instruct")]
    L = []
    L += scalar("sglang:num_running_reqs", "gauge", "The number of running requests.", lab, st["run"])
    L += scalar("sglang:num_used_tokens", "gauge", "The number of used tokens.", lab, st["used"])
    L += scalar("sglang:token_usage", "gauge", "The token usage.", lab, st["kv"])
    L += scalar("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", lab, 812.5)
    L += scalar("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", lab, st["wait"])
    L += scalar("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", lab, st["tok"] * 3)
    L += scalar("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.", lab, st["tok"])
    L += scalar("sglang:num_requests_total", "counter", "Number of requests processed.", lab, st["req"])
    L += hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lab, SG_TTFT, st["ttft"], st["ttft_sum"])
    L += hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lab, SG_ITL, st["itl"], st["itl_sum"])
    L += hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", lab, SG_E2E, st["e2e"], st["e2e_sum"])
    L += hist("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", lab, SG_QUEUE, st["queue"], st["queue_sum"])
    write(fname, L)


sbase = dict(run=10, used=4000, kv=0.05, wait=0, tok=50000, req=400,
             ttft={0.1: 300, 0.2: 100}, ttft_sum=40.0, itl={0.010: 40000}, itl_sum=300.0,
             e2e={4: 400}, e2e_sum=1200.0, queue={0.0: 400}, queue_sum=0.0)
swin = dict(ttft={0.2: 40, 0.4: 30, 0.6: 20, 1: 8, 2: 2},
            itl={0.010: 5000, 0.015: 3000, 0.020: 1500, 0.040: 400, 0.060: 100},
            e2e={2: 20, 4: 50, 6: 20, 8: 8, 10: 2}, queue={0.0: 50, 0.1: 30, 0.2: 10, 0.5: 5, 1: 5})
sb = dict(sbase, run=162, used=123859, kv=0.28, wait=17, tok=60000, req=500,
          ttft=add(sbase["ttft"], swin["ttft"]), ttft_sum=sbase["ttft_sum"] + 30.0,
          itl=add(sbase["itl"], swin["itl"]), itl_sum=sbase["itl_sum"] + 130.0,
          e2e=add(sbase["e2e"], swin["e2e"]), e2e_sum=sbase["e2e_sum"] + 420.0,
          queue=add(sbase["queue"], swin["queue"]), queue_sum=sbase["queue_sum"] + 12.0)
sglang("sglang-current-a.txt", sbase)
sglang("sglang-current-b.txt", sb)


# ---- Triton: counters (us), pending requests, first-response histogram (ms) and the documented queue summary ----
def triton(fname, st):
    L = []
    L += ["# HELP nv_inference_request_success Number of successful inference requests, all batch sizes",
          "# TYPE nv_inference_request_success counter",
          'nv_inference_request_success{model="llama",version="1"} %d' % st["req"],
          "# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes",
          "# TYPE nv_inference_request_failure counter",
          'nv_inference_request_failure{model="llama",version="1",reason="BACKEND"} 0',
          "# HELP nv_inference_count Number of inferences performed (does not include cached requests)",
          "# TYPE nv_inference_count counter",
          'nv_inference_count{model="llama",version="1"} %d' % st["req"],
          "# HELP nv_inference_exec_count Number of model executions performed (does not include cached requests)",
          "# TYPE nv_inference_exec_count counter",
          'nv_inference_exec_count{model="llama",version="1"} %d' % (st["req"] // 2),
          "# HELP nv_inference_request_duration_us Cumulative inference request duration in microseconds (includes cached requests)",
          "# TYPE nv_inference_request_duration_us counter",
          'nv_inference_request_duration_us{model="llama",version="1"} %d' % st["dur"],
          "# HELP nv_inference_queue_duration_us Cumulative inference queuing duration in microseconds (includes cached requests)",
          "# TYPE nv_inference_queue_duration_us counter",
          'nv_inference_queue_duration_us{model="llama",version="1"} %d' % st["qdur"],
          "# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution per-model.",
          "# TYPE nv_inference_pending_request_count gauge",
          'nv_inference_pending_request_count{model="llama",version="1"} %d' % st["pending"]]
    L += hist("nv_inference_first_response_histogram_ms",
              "Duration from request to first response in milliseconds", [("model", "llama"), ("version", "1")],
              TR_FIRST, st["first"], st["first_sum"])
    # the summary block of Triton's guide (summary_latencies=true), as printed there
    L += ["# HELP nv_inference_queue_summary_us Summary of inference queuing duration in microseconds (includes cached requests)",
          "# TYPE nv_inference_queue_summary_us summary",
          'nv_inference_queue_summary_us_count{model="my_model",version="1"} 161',
          'nv_inference_queue_summary_us_sum{model="my_model",version="1"} 11110',
          'nv_inference_queue_summary_us{model="my_model",version="1",quantile="0.5"} 55',
          'nv_inference_queue_summary_us{model="my_model",version="1",quantile="0.9"} 97',
          'nv_inference_queue_summary_us{model="my_model",version="1",quantile="0.95"} 98',
          'nv_inference_queue_summary_us{model="my_model",version="1",quantile="0.99"} 101',
          'nv_inference_queue_summary_us{model="my_model",version="1",quantile="0.999"} 101']
    write(fname, L)


triton("triton-a.txt", dict(req=100, dur=5000000, qdur=1000000, pending=4, first={100: 60, 500: 40}, first_sum=12000.0))
triton("triton-b.txt", dict(req=200, dur=13000000, qdur=3500000, pending=2,
                            first={100: 70, 500: 70, 2000: 50, 5000: 10}, first_sum=150000.0))
