/* The `serving` backend. One scrape per read_serving, bounded (with the
 * confirmation GET) by timeout_ms so it fits the control period; everything a scrape yields is committed
 * only when the whole scrape is good, so a failed one never leaves half
 * fresh state behind. */
#include "hal/backend_opts.h"
#include "hal/hal_serving.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hal/curl_util.h"
#include "hal/hal_sim.h"
#include "hal/precision_act.h"
#include "hal/promtext.h"
#include "hal/router_haproxy.h"

enum fmt { FMT_VLLM, FMT_SGLANG, FMT_TRITON, FMT_GENERIC, FMT_N };

static const char *const fmt_name[FMT_N] = { "vllm", "sglang", "triton", "generic" };

/* Metrics the backend reads; option key "<key>_metric" names each. The
 * histograms come first (H_N of them, in the order of hal_serving's). */
enum metric {
	M_TTFT,
	M_TBT,
	M_E2E,
	M_QTIME, /* time waiting to be scheduled */
	M_REQ,
	M_TOK,
	M_RUN,
	M_WAIT,
	M_KV,    /* KV cache in use, 0..1 */
	M_DUR,   /* cumulative request time counter (Triton, us) */
	M_QDUR,  /* cumulative queue time counter (Triton, us) */
	M_INT8_TOK,
	M_SLICE_REQ,
	M_SLICE_INT8_REQ,
	M_SLICE_INT8_TOK,
	M_Q_SAMPLES,
	M_Q_MISM,
	M_CONFIRM,
	M_N
};
#define H_N 4
#define BIT(m) (1u << (m))

static const char *const metric_key[M_N] = {
	"ttft_metric", "tbt_metric", "e2e_metric", "queue_time_metric", "requests_metric",
	"tokens_metric", "running_metric", "waiting_metric", "kv_usage_metric", "duration_metric",
	"queue_duration_metric", "int8_tokens_metric", "slice_requests_metric",
	"slice_int8_requests_metric", "slice_int8_tokens_metric", "quality_samples_metric",
	"quality_mismatches_metric", "confirm_metric",
};

enum unit { U_NONE, U_S, U_MS, U_US };

static double unit_ms(enum unit u)
{
	switch (u) {
	case U_S: return 1000.0;
	case U_US: return 0.001;
	default: return 1.0;
	}
}

/* The default metric names, as data: one row per server, role and name.
 * Rows of one server and role are alternatives, the current name first:
 * the first family present in a scrape wins, so a server of an older
 * release is read too (an older name is never preferred over a newer one
 * the same server also serves during its deprecation). since/until: the
 * release or change that added, renamed or removed the name ("" where it is
 * as old as the server's endpoint, or still current). Sources per row in
 * docs/serving-integration.md ("Metric names"); each server's exposition
 * as captured is in tests/data/serving/. */
struct metric_row {
	enum fmt server;
	enum metric role;
	const char *name;
	enum prom_type type;
	enum unit unit;
	const char *since, *until;
};

static const struct metric_row metric_rows[] = {
	/* vLLM (vllm/v1/metrics/loggers.py). Its policy (docs/usage/metrics.md):
	 * a metric deprecated in X.Y is hidden in X.Y+1 (back with
	 * --show-hidden-metrics-for-version=X.Y) and removed in X.Y+2. */
	{ FMT_VLLM, M_TTFT, "vllm:time_to_first_token_seconds", PROM_HISTOGRAM, U_S, "", "" },
	{ FMT_VLLM, M_TBT, "vllm:inter_token_latency_seconds", PROM_HISTOGRAM, U_S, "v0.11 (#24015)", "" },
	/* the same histogram, old name: deprecated v0.11, hidden v0.12 (#29330),
	 * removed by vllm-project/vllm#32661 (merged 2026-01-20) */
	{ FMT_VLLM, M_TBT, "vllm:time_per_output_token_seconds", PROM_HISTOGRAM, U_S, "",
	  "deprecated v0.11, hidden v0.12, removed #32661" },
	{ FMT_VLLM, M_E2E, "vllm:e2e_request_latency_seconds", PROM_HISTOGRAM, U_S, "", "" },
	{ FMT_VLLM, M_QTIME, "vllm:request_queue_time_seconds", PROM_HISTOGRAM, U_S, "", "" },
	{ FMT_VLLM, M_REQ, "vllm:request_success_total", PROM_COUNTER, U_NONE, "", "" },
	{ FMT_VLLM, M_TOK, "vllm:generation_tokens_total", PROM_COUNTER, U_NONE, "", "" },
	{ FMT_VLLM, M_RUN, "vllm:num_requests_running", PROM_GAUGE, U_NONE, "", "" },
	{ FMT_VLLM, M_WAIT, "vllm:num_requests_waiting", PROM_GAUGE, U_NONE, "", "" },
	{ FMT_VLLM, M_KV, "vllm:kv_cache_usage_perc", PROM_GAUGE, U_NONE, "v0.9.2 (#18354)", "" },
	/* renamed by #18354 (v0.9.2; deprecated as of v0.10), hidden v0.11,
	 * removed in v0.12 by vllm-project/vllm#29330 (merged 2025-11-24) */
	{ FMT_VLLM, M_KV, "vllm:gpu_cache_usage_perc", PROM_GAUGE, U_NONE, "", "removed v0.12 (#29330)" },

	/* SGLang (python/sglang/srt/metrics/collector.py, --enable-metrics) */
	{ FMT_SGLANG, M_TTFT, "sglang:time_to_first_token_seconds", PROM_HISTOGRAM, U_S, "", "" },
	{ FMT_SGLANG, M_TBT, "sglang:inter_token_latency_seconds", PROM_HISTOGRAM, U_S, "#3988", "" },
	/* replaced by the one above (sgl-project/sglang#3988), removed by #4914 */
	{ FMT_SGLANG, M_TBT, "sglang:time_per_output_token_seconds", PROM_HISTOGRAM, U_S, "",
	  "removed #4914" },
	{ FMT_SGLANG, M_E2E, "sglang:e2e_request_latency_seconds", PROM_HISTOGRAM, U_S, "", "" },
	{ FMT_SGLANG, M_QTIME, "sglang:queue_time_seconds", PROM_HISTOGRAM, U_S, "#4444", "" },
	/* absent from SGLang's documented example: the e2e histogram's _count
	 * stands in (requests_completed below) */
	{ FMT_SGLANG, M_REQ, "sglang:num_requests_total", PROM_COUNTER, U_NONE, "", "" },
	{ FMT_SGLANG, M_TOK, "sglang:generation_tokens_total", PROM_COUNTER, U_NONE, "", "" },
	{ FMT_SGLANG, M_RUN, "sglang:num_running_reqs", PROM_GAUGE, U_NONE, "", "" },
	{ FMT_SGLANG, M_WAIT, "sglang:num_queue_reqs", PROM_GAUGE, U_NONE, "", "" },
	{ FMT_SGLANG, M_KV, "sglang:token_usage", PROM_GAUGE, U_NONE, "", "" },

	/* Triton (docs/user_guide/metrics.md): latencies are counters of
	 * microseconds by default; the first-response histogram only with
	 * --metrics-config histogram_latencies=true */
	{ FMT_TRITON, M_TTFT, "nv_inference_first_response_histogram_ms", PROM_HISTOGRAM, U_MS, "", "" },
	{ FMT_TRITON, M_REQ, "nv_inference_request_success", PROM_COUNTER, U_NONE, "", "" },
	{ FMT_TRITON, M_TOK, "nv_inference_count", PROM_COUNTER, U_NONE, "", "" },
	{ FMT_TRITON, M_WAIT, "nv_inference_pending_request_count", PROM_GAUGE, U_NONE, "", "" },
	{ FMT_TRITON, M_DUR, "nv_inference_request_duration_us", PROM_COUNTER, U_US, "", "" },
	{ FMT_TRITON, M_QDUR, "nv_inference_queue_duration_us", PROM_COUNTER, U_US, "", "" },
};

/* What each format requires (a scrape without it is missing-metric) and
 * the units of metrics named by *_metric options. */
struct fmt_info {
	uint32_t required; /* BIT(enum metric) */
	enum unit hist_unit, counter_unit;
};

static const struct fmt_info fmt_info[FMT_N] = {
	[FMT_VLLM] = { BIT(M_TTFT) | BIT(M_TBT) | BIT(M_E2E) | BIT(M_REQ) | BIT(M_TOK) | BIT(M_RUN) |
			       BIT(M_WAIT),
		       U_S, U_S },
	[FMT_SGLANG] = { BIT(M_TTFT) | BIT(M_TBT) | BIT(M_E2E) | BIT(M_TOK) | BIT(M_RUN) | BIT(M_WAIT),
			 U_S, U_S },
	[FMT_TRITON] = { BIT(M_REQ) | BIT(M_DUR), U_MS, U_US },
	[FMT_GENERIC] = { 0, U_S, U_S },
};

#define SV_MAX_REPLICAS 4
#define SV_MAX_ALT 4

/* One endpoint of the device (url, then each of replica_urls) and what its
 * scrapes left: each replica's counters and histograms are followed on
 * their own, so a restart of one is a reset of that one only. */
struct replica {
	char *url;
	/* the previous scrape's histograms as served (n == 0: none yet) */
	struct prom_buckets last[H_N];
	struct prom_buckets last_dur[2]; /* Triton: request and queue time over the requests */
	struct prom_counter c_req, c_tok, c_int8_tok;
	struct prom_counter c_slice[3][HAL_MAX_SLICES]; /* req, int8 req, int8 tok */
	struct prom_counter c_qs[HAL_MAX_SLICES], c_qm[HAL_MAX_SLICES];
};

#define Q_DGRAM_MAX 4096
#define Q_DRAIN_MAX 1024

struct sv {
	size_t n_rep;
	struct replica rep[SV_MAX_REPLICAS];
	enum fmt fmt;
	struct prom_matcher match;
	uint32_t timeout_ms;
	size_t max_bytes;
	char *mname[M_N]; /* "a|b": alternatives, the first family present wins */
	bool required[M_N];
	double alt_unit_ms[M_N][SV_MAX_ALT]; /* unit of each alternative, ms per unit */
	char *slice_label;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];

	CURL *curl;
	char *body;
	size_t body_len, body_cap;
	bool body_over;

	/* cumulative state, committed per good scrape */
	bool have_scrape, last_ok, scraped_since_quality;
	/* Each scrape's increase (of every replica) goes into the cumulative
	 * h[], whose windows the governor takes (hist_delta + hist_quantile). */
	struct hist *h[H_N]; /* ttft, tbt, e2e, queue time */
	bool have_h[H_N];    /* ever read: queue_time is offered only then */
	uint64_t queue_len, running;
	bool kv_valid;
	double kv_frac;
	uint32_t unmerged; /* BIT(histogram) merged replica by replica: bounds differ */

	/* quality datagrams */
	int qfd;
	char *qpath;
	uint64_t qs_sock[HAL_MAX_SLICES], qm_sock[HAL_MAX_SLICES];
	/* At most this many samples per slice per read_quality, from the
	 * datagrams and from the scrape's counters each (quality_max_samples). */
	uint64_t q_max_samples;
	uint64_t q_read_sock[HAL_MAX_SLICES]; /* datagram samples this read */
	bool q_scrape_implausible; /* a scrape since the last read_quality dropped an increase */
	double qdelta[HAL_MAX_SLICES];
	uint64_t malformed;
	uint64_t implausible; /* datagrams dropped over quality_max_samples */

	/* precision */
	struct pact act;
	bool act_on;
	struct hap *hap; /* precision: haproxy (else act) */
	char hap_be[HAL_MAX_SLICES][HAP_NAME_LEN]; /* haproxy_backends, until hap_open copies them */
	uint64_t gen_set, gen_applied, t_set_ms;
	char *confirm_url, *confirm_file, *confirm_field;
	uint64_t confirm_grace_ms;

	/* timestamps and the confirmation grace on the daemon's clock (NULL:
	 * CLOCK_MONOTONIC); HTTP deadlines are real time (govd_mono_ms) */
	const struct govd_clock *clock;

	/* Power and thermal side (option power_backend): another backend
	 * opened with the power.* options, behind sample, get_limits and the
	 * clock / power-limit writes of this device's own ops table. A sim
	 * plant is advanced here to the clock's elapsed time since open (the
	 * daemon advances only devices whose backend is sim) and its
	 * timestamps are moved onto that clock. */
	bool has_inner, inner_sim, fwd_precision;
	bool prec_written; /* the actuator (file/http/exec) was written since the last restore */
	/* What the last document carried: each write carries both, so a
	 * shadow-rate request keeps the INT8 shares and the reverse. */
	double int8_sent[HAL_MAX_SLICES], shadow_sent[HAL_MAX_SLICES];
	struct hal_dev inner;
	struct hal_ops ops;
	struct govd_clock pclk;
	uint64_t t0_ms;
	const char **okeys, **ovals, **ikeys, **ivals; /* the options split */

	char fault_msg[320];
	char qfault_msg[192];
};

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t sat_add_u64(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A double accumulator as a count: no out-of-range conversion, whatever
 * it summed (values are checked before they count; this is the backstop). */
static uint64_t counter_u64(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 9.2e18 ? UINT64_C(9200000000000000000) : (uint64_t)llround(v);
}

const char *hal_serving_fault_name(uint32_t bit)
{
	switch (bit) {
	case HAL_SVF_CONNECT: return "connect";
	case HAL_SVF_TIMEOUT: return "timeout";
	case HAL_SVF_HTTP: return "http-status";
	case HAL_SVF_PARSE: return "parse";
	case HAL_SVF_MISSING: return "missing-metric";
	case HAL_SVF_RESET: return "counter-reset";
	case HAL_SVF_ACTUATION: return "actuation";
	case HAL_SVF_QUALITY_MSG: return "quality-message";
	case HAL_SVF_IMPLAUSIBLE: return "implausible-value";
	default: return "?";
	}
}

/* ---- options ---- */

static const char *const plain_keys[] = {
	"url", "replica_urls", "format", "labels", "timeout_ms", "max_bytes", "latency_unit",
	"slices", "slice_label", "quality_socket", "precision", "precision_target",
	"precision_timeout_ms", "precision_retries", "confirm_url", "confirm_file",
	"confirm_field", "confirm_grace_ms", "power_backend", "quality_max_samples",
	"haproxy_backends", "haproxy_server_full", "haproxy_server_low", "haproxy_total_weight",
	"haproxy_max_step", "haproxy_budget_ms", NULL,
};

#define POWER_PREFIX "power."

#define SRC(cfg) ((cfg)->name ? (cfg)->name : "serving")

static int parse_slices(struct sv *s, const struct hal_dev_cfg *cfg, const char *v,
			struct diag_list *diags)
{
	const char *p = v;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *b = p;
		while (*p && *p != ',')
			p++;
		size_t n = (size_t)(p - b);
		while (n && b[n - 1] == ' ')
			n--;
		if (s->n_slices == HAL_MAX_SLICES || n >= HAL_NAME_LEN) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.slices", "bad-value",
				 "at most %d slices of at most %d characters", HAL_MAX_SLICES,
				 HAL_NAME_LEN - 1);
			return -EINVAL;
		}
		for (size_t i = 0; i < s->n_slices; i++)
			if (strlen(s->slice_name[i]) == n && !memcmp(s->slice_name[i], b, n)) {
				diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.slices", "duplicate-slice",
					 "slice '%.*s' listed twice", (int)n, b);
				return -EINVAL;
			}
		memcpy(s->slice_name[s->n_slices], b, n);
		s->slice_name[s->n_slices][n] = '\0';
		s->n_slices++;
	}
	return 0;
}

/* haproxy_backends: "slice=backend,..."; a slice not named is the backend
 * of its own name. */
static int hap_backends(struct sv *s, const struct hal_dev_cfg *cfg, const char *v,
			struct hap_cfg *hc, struct diag_list *diags)
{
	for (size_t i = 0; i < s->n_slices; i++)
		hc->slice[i].backend = s->slice_name[i];
	if (!v)
		return 0;
	char (*buf)[HAP_NAME_LEN] = s->hap_be;
	size_t k = 0;
	const char *p = v;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *b = p, *eq = NULL;
		while (*p && *p != ',') {
			if (*p == '=' && !eq)
				eq = p;
			p++;
		}
		size_t ln = eq ? (size_t)(eq - b) : 0, vn = eq ? (size_t)(p - eq - 1) : 0;
		while (vn && eq[vn] == ' ')
			vn--;
		int idx = -1;
		for (size_t i = 0; eq && i < s->n_slices; i++)
			if (strlen(s->slice_name[i]) == ln && !memcmp(s->slice_name[i], b, ln))
				idx = (int)i;
		if (!eq || idx < 0 || !vn || vn >= HAP_NAME_LEN || k == HAL_MAX_SLICES) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.haproxy_backends", "bad-value",
				 "'%.*s': want slice=backend with a slice of options.slices and a backend "
				 "of 1..%d characters",
				 (int)(p - b), b, HAP_NAME_LEN - 1);
			return -EINVAL;
		}
		memcpy(buf[k], eq + 1, vn);
		buf[k][vn] = '\0';
		hc->slice[idx].backend = buf[k++];
	}
	return 0;
}

static int quality_socket_open(struct sv *s, const struct hal_dev_cfg *cfg, const char *path,
			       struct diag_list *diags)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.quality_socket", "bad-value",
			 "path longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.quality_socket", "bad-value",
				 "%s exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path); /* a stale socket of an earlier run */
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.quality_socket", "io",
			 "bind %s: %s", path, strerror(e));
		return -e;
	}
	s->qpath = strdup(path);
	if (!s->qpath) {
		close(fd);
		unlink(path);
		return -ENOMEM;
	}
	s->qfd = fd;
	return 0;
}

static void sv_pick_ops(struct hal_dev *dev, struct sv *s);
static bool quality_from_scrape(const struct sv *s);

static void sv_free(struct sv *s)
{
	if (!s)
		return;
	if (s->has_inner)
		hal_close(&s->inner);
	free(s->okeys);
	free(s->ovals);
	free(s->ikeys);
	free(s->ivals);
	if (s->curl)
		hal_curl()->easy_cleanup(s->curl);
	if (s->qfd >= 0)
		close(s->qfd);
	if (s->qpath) {
		unlink(s->qpath);
		free(s->qpath);
	}
	pact_fini(&s->act);
	if (s->hap) {
		hap_restore(s->hap); /* the weights found at open (or adopted) */
		free(s->hap);
	}
	for (int i = 0; i < H_N; i++)
		free(s->h[i]);
	for (int i = 0; i < M_N; i++)
		free(s->mname[i]);
	for (size_t i = 0; i < s->n_rep; i++)
		free(s->rep[i].url);
	free(s->slice_label);
	free(s->body);
	free(s->confirm_url);
	free(s->confirm_file);
	free(s->confirm_field);
	free(s);
}

static char *dup_or_null(const char *v, int *bad)
{
	if (!v)
		return NULL;
	char *d = strdup(v);
	if (!d)
		*bad = 1;
	return d;
}

/* Opens the power side; its option errors name the device and the key
 * without the power. prefix. */
static int power_open(struct sv *s, const struct hal_dev_cfg *cfg, const char *backend,
		      size_t n_in, struct diag_list *diags)
{
	struct hal_dev_cfg ic = {
		.name = cfg->name,
		.backend = backend,
		.n_opts = n_in,
		.keys = s->ikeys,
		.values = s->ivals,
		.clock = cfg->clock,
		.read_only = cfg->read_only,
	};
	int rc = hal_open(&s->inner, &ic, diags);
	if (rc)
		return rc;
	s->has_inner = true;
	if (hal_sim_clock(&s->inner, &s->pclk) == 0) {
		s->inner_sim = true;
		s->t0_ms = govd_clock_now_or_mono_ms(s->clock);
	}
	/* A power side with the same slices (a sim plant) gets the INT8
	 * shares too, so its power follows the precision in force. */
	struct hal_serving isv;
	if (hal_can_set_precision(&s->inner) && hal_can_read_serving(&s->inner) &&
	    s->inner.ops->read_serving(&s->inner, &isv) == 0 && isv.n_slices == s->n_slices &&
	    s->n_slices) {
		s->fwd_precision = true;
		for (size_t i = 0; i < s->n_slices; i++)
			s->fwd_precision &= !strcmp(isv.slice_name[i], s->slice_name[i]);
	}
	return 0;
}

/* replica_urls: more endpoints of the same slices (a BF16 and an FP8
 * replica behind one router), blank-separated; merged with url. */
static int parse_replicas(struct sv *s, const struct hal_dev_cfg *cfg, const char *v,
			  struct diag_list *diags, int *oom)
{
	const char *p = v;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		const char *b = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		int n = (int)(p - b);
		if (n < 5 || strncmp(b, "http", 4) != 0) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.replica_urls", "bad-value",
				 "'%.*s' is not a metrics endpoint (http://host:port/metrics; blanks "
				 "separate the endpoints)", n > 80 ? 80 : n, b);
			return -EINVAL;
		}
		if (s->n_rep == SV_MAX_REPLICAS) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.replica_urls", "range",
				 "at most %d endpoints with url", SV_MAX_REPLICAS);
			return -EINVAL;
		}
		for (size_t i = 0; i < s->n_rep; i++)
			if (s->rep[i].url && (int)strlen(s->rep[i].url) == n && !memcmp(s->rep[i].url, b, (size_t)n)) {
				diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.replica_urls",
					 "duplicate-url", "'%.*s' given twice (%s)", n > 80 ? 80 : n, b,
					 i ? "in replica_urls" : "as url too");
				return -EINVAL;
			}
		if (s->n_rep == 0) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.replica_urls", "missing-key",
				 "replica_urls adds endpoints to url, which is missing");
			return -EINVAL;
		}
		char *u = strndup(b, (size_t)n);
		if (!u) {
			*oom = 1;
			return -ENOMEM;
		}
		s->rep[s->n_rep++].url = u;
	}
}

/* The names of metric m: the user's (a|b, unit: latency_unit or the
 * format's) or the format's rows. False if none. */
static bool metric_names(struct sv *s, enum metric m, const char *user, double lat_unit_ms, int *oom)
{
	const struct fmt_info *d = &fmt_info[s->fmt];
	bool hist = m < H_N;
	char buf[512];
	size_t o = 0, k = 0;
	buf[0] = '\0';
	if (user) {
		snprintf(buf, sizeof(buf), "%s", user);
		double u = hist ? unit_ms(d->hist_unit) : unit_ms(d->counter_unit);
		if (hist && lat_unit_ms)
			u = lat_unit_ms;
		for (k = 0; k < SV_MAX_ALT; k++)
			s->alt_unit_ms[m][k] = u;
	} else {
		for (size_t i = 0; i < sizeof(metric_rows) / sizeof(metric_rows[0]); i++) {
			const struct metric_row *r = &metric_rows[i];
			if (r->server != s->fmt || r->role != m || k == SV_MAX_ALT)
				continue;
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", k ? "|" : "", r->name);
			s->alt_unit_ms[m][k++] = hist && lat_unit_ms ? lat_unit_ms : unit_ms(r->unit);
		}
		if (!k)
			return false;
	}
	s->mname[m] = strdup(buf);
	if (!s->mname[m])
		*oom = 1;
	return s->mname[m] != NULL;
}

/* Open, or with dev NULL only judge the options (check_options): every
 * option is judged before the first socket, file or request. */
/* What the options parsing hands the opening: the precision actuator's
 * kind and settings. */
struct sv_parsed {
	uint64_t ptimeout, pretries; /* precision_timeout_ms (0: the scrape's), _retries */
	enum pact_kind pk;
	bool haproxy;
	struct hap_cfg hc;
};

/* The scrape's options: the server's URL(s), its format and labels,
 * timeouts and sizes, the metric names and their units, the slices. 0, or
 * 1 with diags. */
static int sv_parse_scrape(struct sv *s, struct bopts *o, const struct hal_dev_cfg *cfg,
			   struct diag_list *diags, struct sv_parsed *p, int *oom_out)
{
	int bad = 0, oom = 0;
	const char *v = bopts_str(o, "url", NULL);
	if (!v || strncmp(v, "http", 4) != 0) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.url", v ? "bad-value" : "missing-key",
			 "the metrics endpoint, http://host:port/metrics");
		bad = 1;
	}
	if (v) {
		s->rep[0].url = dup_or_null(v, &oom);
		s->n_rep = 1;
	}
	if ((v = bopts_str(o, "replica_urls", NULL)) && parse_replicas(s, cfg, v, diags, &oom))
		bad = 1;
	v = bopts_str(o, "format", NULL);
	s->fmt = FMT_VLLM;
	if (v) {
		int k = 0;
		while (k < FMT_N && strcmp(v, fmt_name[k]))
			k++;
		if (k == FMT_N) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.format", "bad-enum",
				 "'%s' is not one of vllm, sglang, triton, generic", v);
			bad = 1;
		} else {
			s->fmt = (enum fmt)k;
		}
	}
	char err[200];
	if (prom_matcher_parse(bopts_str(o, "labels", NULL), &s->match, err, sizeof(err))) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.labels", "bad-value", "%s", err);
		bad = 1;
	}
	uint64_t timeout_ms = 500, max_bytes = 8u << 20, grace = 5000;
	bad |= bopts_u64(o, "timeout_ms", 10, 600000, timeout_ms, &timeout_ms) != 0;
	bad |= bopts_u64(o, "max_bytes", 1024, UINT64_C(1) << 30, max_bytes, &max_bytes) != 0;
	bad |= bopts_u64(o, "precision_timeout_ms", 10, 600000, p->ptimeout, &p->ptimeout) != 0;
	bad |= bopts_u64(o, "precision_retries", 0, 10, p->pretries, &p->pretries) != 0;
	bad |= bopts_u64(o, "confirm_grace_ms", 0, UINT64_C(86400000), grace, &grace) != 0;
	s->timeout_ms = (uint32_t)timeout_ms;
	s->max_bytes = (size_t)max_bytes;
	s->confirm_grace_ms = grace;
	uint64_t qmax = 10000;
	bad |= bopts_u64(o, "quality_max_samples", 1, UINT64_C(1000000000), qmax, &qmax) != 0;
	s->q_max_samples = qmax;

	const struct fmt_info *d = &fmt_info[s->fmt];
	double lat_unit_ms = 0; /* latency_unit: every histogram's unit */
	if ((v = bopts_str(o, "latency_unit", NULL))) {
		if (!strcmp(v, "s"))
			lat_unit_ms = 1000.0;
		else if (!strcmp(v, "ms"))
			lat_unit_ms = 1.0;
		else if (!strcmp(v, "us"))
			lat_unit_ms = 0.001;
		else {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.latency_unit", "bad-enum",
				 "'%s' is not one of s, ms, us", v);
			bad = 1;
		}
	}
	for (int m = 0; m < M_N; m++) {
		const char *user = bopts_str(o, metric_key[m], NULL);
		if (user && !*user)
			continue; /* "" switches a default off */
		if (metric_names(s, (enum metric)m, user, lat_unit_ms, &oom))
			s->required[m] = user || (d->required & BIT(m));
	}
	/* per-slice metrics are matched per slice; absence is not a fault */
	for (int m = M_SLICE_REQ; m <= M_Q_MISM; m++)
		s->required[m] = false;
	s->required[M_CONFIRM] = false;
	s->slice_label = dup_or_null(bopts_str(o, "slice_label", "slice"), &oom);
	if ((v = bopts_str(o, "slices", NULL)) && parse_slices(s, cfg, v, diags))
		bad = 1;
	*oom_out |= oom;
	return bad;
}

/* The precision actuator's options: file/http/exec, or HAProxy weights
 * (their keys refused without it). 0, or 1 with diags. */
static int sv_parse_precision(struct sv *s, struct bopts *o, const struct hal_dev_cfg *cfg,
			      struct diag_list *diags, struct sv_parsed *p)
{
	int bad = 0;
	const char *v;
	p->pk = PACT_NONE;
	bool haproxy = p->haproxy = (v = bopts_str(o, "precision", NULL)) && !strcmp(v, "haproxy");
	if (v && !haproxy && pact_kind_parse(v, &p->pk)) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.precision", "bad-enum",
			 "'%s' is not one of file, http, exec, haproxy, none", v);
		bad = 1;
	}
	if ((p->pk != PACT_NONE || haproxy) && !bopts_str(o, "precision_target", NULL)) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.precision_target", "missing-key",
			 "precision: %s needs precision_target (a path, URL, command or, for "
			 "haproxy, the stats socket)", v);
		bad = 1;
	}
	struct hap_cfg *hc = &p->hc;
	uint64_t hap_total = 100, hap_step = 25, hap_budget = 0;
	bad |= bopts_u64(o, "haproxy_total_weight", 1, HAP_WEIGHT_MAX, hap_total, &hap_total) != 0;
	bad |= bopts_u64(o, "haproxy_max_step", 1, HAP_WEIGHT_MAX, hap_step, &hap_step) != 0;
	bad |= bopts_u64(o, "haproxy_budget_ms", 10, 60000, hap_budget, &hap_budget) != 0;
	if (!haproxy) {
		static const char *const hk[] = { "haproxy_backends", "haproxy_server_full",
						  "haproxy_server_low", "haproxy_total_weight",
						  "haproxy_max_step", "haproxy_budget_ms" };
		for (size_t i = 0; i < sizeof(hk) / sizeof(hk[0]); i++)
			if (bopts_str(o, hk[i], NULL)) {
				char path[64];
				snprintf(path, sizeof(path), "options.%s", hk[i]);
				diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, path, "unused-key",
					 "%s is for precision: haproxy", hk[i]);
				bad = 1;
			}
	}
	if (haproxy && s->n_slices && hap_backends(s, cfg, bopts_str(o, "haproxy_backends", NULL),
						   hc, diags))
		bad = 1;
	if (haproxy && s->n_slices && !bad) {
		hc->socket_path = bopts_str(o, "precision_target", NULL);
		hc->n_slices = s->n_slices;
		hc->total_weight = (unsigned)hap_total;
		hc->max_step = (unsigned)hap_step;
		hc->timeout_ms = (uint32_t)(p->ptimeout ? p->ptimeout : s->timeout_ms);
		hc->read_only = cfg->read_only;
		hc->period_budget_ms = (uint32_t)hap_budget; /* 0: one command's timeout */
		const char *full = bopts_str(o, "haproxy_server_full", "bf16");
		const char *low = bopts_str(o, "haproxy_server_low", "fp8");
		for (size_t i = 0; i < s->n_slices; i++) {
			hc->slice[i].server_hi = full;
			hc->slice[i].server_lo = low;
		}
		char herr[200], hpath[64];
		const char *hkey;
		if (hap_cfg_check(hc, &hkey, herr, sizeof(herr))) {
			snprintf(hpath, sizeof(hpath), "options.%s", hkey);
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, hpath, "bad-value", "%s", herr);
			bad = 1;
		}
	}
	if ((p->pk != PACT_NONE || haproxy) && s->n_slices == 0) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.slices", "missing-key",
			 "a precision actuator needs the slice names (slices: code,chat)");
		bad = 1;
	}
	return bad;
}

static int sv_setup(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	char cerr[160];
	int crc = dev ? hal_curl_load(cerr, sizeof(cerr)) : 0;
	if (crc) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "", "curl-not-found", "serving: %s", cerr);
		return crc;
	}
	struct sv *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->qfd = -1;
	s->clock = cfg->clock;
	/* power.<key> options go to the power backend, the rest are ours */
	size_t nk = cfg->n_opts ? cfg->n_opts : 1, n_own = 0, n_in = 0;
	s->okeys = calloc(nk, sizeof(char *));
	s->ovals = calloc(nk, sizeof(char *));
	s->ikeys = calloc(nk, sizeof(char *));
	s->ivals = calloc(nk, sizeof(char *));
	if (!s->okeys || !s->ovals || !s->ikeys || !s->ivals) {
		sv_free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->n_opts; i++) {
		const char *k = cfg->keys[i];
		if (k && !strncmp(k, POWER_PREFIX, strlen(POWER_PREFIX))) {
			s->ikeys[n_in] = k + strlen(POWER_PREFIX);
			s->ivals[n_in++] = cfg->values[i];
		} else {
			s->okeys[n_own] = k;
			s->ovals[n_own++] = cfg->values[i];
		}
	}
	struct hal_dev_cfg own = *cfg;
	own.n_opts = n_own;
	own.keys = s->okeys;
	own.values = s->ovals;
	cfg = &own;
	int bad = 0, oom = 0;
	/* Allowed: the plain keys and one <name>_metric key per metric. */
	const char *allowed[sizeof(plain_keys) / sizeof(plain_keys[0]) + M_N];
	size_t na = 0;
	for (size_t i = 0; plain_keys[i]; i++)
		allowed[na++] = plain_keys[i];
	for (size_t i = 0; i < M_N; i++)
		allowed[na++] = metric_key[i];
	allowed[na] = NULL;
	struct bopts ob, *o = &ob;
	bopts_init(o, cfg, diags, "serving");
	if (bopts_check_keys(o, allowed))
		bad = 1;
	struct sv_parsed pp = { 0 };
	bad |= sv_parse_scrape(s, o, cfg, diags, &pp, &oom);
	bad |= sv_parse_precision(s, o, cfg, diags, &pp);
	enum pact_kind pk = pp.pk;
	bool haproxy = pp.haproxy;
	const char *v;
	const char *power_backend = bopts_str(o, "power_backend", NULL);
	if (power_backend && !strcmp(power_backend, "serving")) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.power_backend", "bad-value",
			 "the power side must be a device backend (sim, sysfs, nvml, ...), not serving");
		bad = 1;
	}
	if (!power_backend && n_in) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.power_backend", "missing-key",
			 "power.* options need power_backend (the backend they are for)");
		bad = 1;
	}
	s->confirm_url = dup_or_null(bopts_str(o, "confirm_url", NULL), &oom);
	s->confirm_file = dup_or_null(bopts_str(o, "confirm_file", NULL), &oom);
	s->confirm_field = dup_or_null(bopts_str(o, "confirm_field", "generation"),
				       &oom);
	if (oom) {
		sv_free(s);
		return -ENOMEM;
	}
	if (bad || !dev) {
		sv_free(s);
		return bad ? -EINVAL : 0;
	}
	int rc = -ENOMEM;
	for (int i = 0; i < H_N; i++) {
		s->h[i] = calloc(1, sizeof(struct hist));
		if (!s->h[i])
			goto out_free;
	}
	for (size_t i = 0; i < HAL_MAX_SLICES; i++)
		s->qdelta[i] = NAN;
	s->curl = hal_curl()->easy_init();
	if (!s->curl)
		goto out_free;
	struct pact_cfg pc = { .kind = pk,
			       .target = bopts_str(o, "precision_target", NULL),
			       .timeout_ms = (uint32_t)(pp.ptimeout ? pp.ptimeout : s->timeout_ms),
			       .retries = (unsigned)pp.pretries };
	if ((rc = pact_init(&s->act, &pc)))
		goto out_free;
	s->act_on = pk != PACT_NONE;
	if (haproxy) {
		rc = -ENOMEM;
		if (!(s->hap = calloc(1, sizeof(*s->hap))))
			goto out_free;
		if ((rc = hap_open(s->hap, &pp.hc))) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.precision_target", "io",
				 "%.400s", s->hap->err);
			free(s->hap);
			s->hap = NULL;
			goto out_free;
		}
		s->act_on = true;
	}
	if ((v = bopts_str(o, "quality_socket", NULL)) && (rc = quality_socket_open(s, cfg, v, diags)))
		goto out_free;
	if (power_backend && (rc = power_open(s, cfg, power_backend, n_in, diags)))
		goto out_free;
	dev->priv = s;
	sv_pick_ops(dev, s);
	return 0;
out_free:
	sv_free(s);
	return rc;
}

static int sv_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	return sv_setup(dev, cfg, diags);
}

static int sv_check_options(const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	return sv_setup(NULL, cfg, diags);
}

static int sv_restore(struct hal_dev *dev);

static void sv_close(struct hal_dev *dev)
{
	if (dev->priv)
		sv_restore(dev); /* what is still changed; the power side's close restores its own */
	sv_free(dev->priv);
	dev->priv = NULL;
}

static int sv_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	return -EOPNOTSUPP; /* no device: this backend only reads the server */
}

static int sv_sample(struct hal_dev *dev, struct hal_sample *out)
{
	return -EOPNOTSUPP;
}

/* ---- scrape ---- */

static size_t body_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct sv *s = ud;
	size_t n = size * nmemb;
	if (s->body_len + n > s->max_bytes) {
		s->body_over = true;
		return 0; /* aborts the transfer */
	}
	if (s->body_len + n > s->body_cap) {
		size_t cap = s->body_cap ? s->body_cap : 65536;
		while (cap < s->body_len + n)
			cap *= 2;
		char *b = realloc(s->body, cap);
		if (!b)
			return 0;
		s->body = b;
		s->body_cap = cap;
	}
	memcpy(s->body + s->body_len, ptr, n);
	s->body_len += n;
	return n;
}

/* GET url into s->body by deadline_ms (CLOCK_MONOTONIC). 0 or a fault bit
 * with s->fault_msg. */
static uint32_t http_get(struct sv *s, const char *url, uint64_t deadline_ms)
{
	CURL *c = s->curl;
	const struct hal_curl *cu = hal_curl();
	uint64_t now = govd_mono_ms();
	if (now >= deadline_ms) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "GET %s: timeout_ms (%u) spent before it",
			 url, s->timeout_ms);
		return HAL_SVF_TIMEOUT;
	}
	long left = (long)(deadline_ms - now);
	s->body_len = 0;
	s->body_over = false;
	hal_curl_reset(c, url, left);
	cu->easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* gzip is optional in the spec */
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	cu->easy_setopt(c, CURLOPT_WRITEDATA, s);
	CURLcode cc = cu->easy_perform(c);
	if (cc == CURLE_WRITE_ERROR && s->body_over) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "GET %s: response larger than max_bytes (%zu)",
			 url, s->max_bytes);
		return HAL_SVF_PARSE;
	}
	if (cc != CURLE_OK) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "GET %s: %s", url, cu->easy_strerror(cc));
		return cc == CURLE_OPERATION_TIMEDOUT ? HAL_SVF_TIMEOUT : HAL_SVF_CONNECT;
	}
	long status = 0;
	cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "GET %s: HTTP %ld", url, status);
		return HAL_SVF_HTTP;
	}
	return 0;
}

/* What one endpoint's scrape yields, before it is committed. */
struct scrape {
	bool has_h[H_N];
	struct prom_buckets h[H_N];
	double h_unit_ms[H_N];
	bool has[M_N];
	double val[M_N];
	double dur_unit_ms[2]; /* M_DUR, M_QDUR */
	bool has_slice[3][HAL_MAX_SLICES];
	double slice[3][HAL_MAX_SLICES];
	bool has_q[2][HAL_MAX_SLICES];
	double qv[2][HAL_MAX_SLICES];
};

enum agg { AGG_SUM, AGG_MAX };

/* Tries each '|' alternative; 0 and the index of the name used in *alt,
 * or the last error. */
static int get_hist(const struct prom_doc *doc, const char *names, const struct prom_matcher *m,
		    struct prom_buckets *out, size_t *alt)
{
	int rc = -ENOENT;
	char buf[256];
	const char *p = names;
	for (size_t k = 0; *p; k++) {
		const char *e = strchr(p, '|');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			rc = prom_histogram_get(doc, buf, m, out);
			if (rc != -ENOENT) {
				*alt = k < SV_MAX_ALT ? k : SV_MAX_ALT - 1;
				return rc;
			}
		}
		p += n + (e ? 1 : 0);
	}
	return rc;
}

static int get_value(const struct prom_doc *doc, const char *names, const struct prom_matcher *m,
		     const char *ln, const char *lv, enum agg agg, double *out, size_t *alt)
{
	int rc = -ENOENT;
	char buf[256];
	const char *p = names;
	for (size_t k = 0; *p; k++) {
		const char *e = strchr(p, '|');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			rc = agg == AGG_MAX ? prom_value_max(doc, buf, m, out)
					    : prom_value_sum(doc, buf, m, ln, lv, out);
			if (rc != -ENOENT) {
				if (alt)
					*alt = k < SV_MAX_ALT ? k : SV_MAX_ALT - 1;
				return rc;
			}
		}
		p += n + (e ? 1 : 0);
	}
	return rc;
}

static void matcher_str(const struct prom_matcher *m, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < m->n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s=\"%s\"", i ? "," : "", m->name[i], m->value[i]);
	if (!m->n)
		snprintf(buf, len, "(any)");
}

static uint32_t extract(struct sv *s, const char *url, const struct prom_doc *doc, struct scrape *sc)
{
	char ms[160];
	for (int i = 0; i < H_N; i++) {
		const char *n = s->mname[M_TTFT + i];
		if (!n)
			continue;
		size_t alt = 0;
		int rc = get_hist(doc, n, &s->match, &sc->h[i], &alt);
		sc->has_h[i] = rc == 0;
		sc->h_unit_ms[i] = s->alt_unit_ms[M_TTFT + i][alt];
		if (rc == -EBADMSG || rc == -E2BIG) {
			snprintf(s->fault_msg, sizeof(s->fault_msg),
				 "%s: histogram %s malformed (no +Inf bucket, differing bounds or over %d buckets)",
				 url, n, PROM_MAX_BUCKETS);
			return HAL_SVF_PARSE;
		}
		if (rc && s->required[M_TTFT + i]) {
			matcher_str(&s->match, ms, sizeof(ms));
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: histogram %s has no series matching %s",
				 url, n, ms);
			return HAL_SVF_MISSING;
		}
	}
	static const int scalar[] = { M_REQ, M_TOK, M_RUN, M_WAIT, M_KV, M_DUR, M_QDUR, M_INT8_TOK, M_CONFIRM };
	for (size_t k = 0; k < sizeof(scalar) / sizeof(scalar[0]); k++) {
		int m = scalar[k];
		if (!s->mname[m])
			continue;
		size_t alt = 0;
		sc->has[m] = get_value(doc, s->mname[m], &s->match, NULL, NULL,
				       m == M_KV ? AGG_MAX : AGG_SUM, &sc->val[m], &alt) == 0;
		if (m == M_DUR || m == M_QDUR)
			sc->dur_unit_ms[m == M_QDUR] = s->alt_unit_ms[m][alt];
		/* a server without a request counter (SGLang's documented
		 * exposition): the e2e histogram counts the finished requests */
		if (m == M_REQ && !sc->has[m] && !s->required[m] && sc->has_h[M_E2E]) {
			sc->val[m] = sc->h[M_E2E].count;
			sc->has[m] = true;
		}
		if (!sc->has[m] && s->required[m]) {
			matcher_str(&s->match, ms, sizeof(ms));
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: metric %s has no series matching %s",
				 url, s->mname[m], ms);
			return HAL_SVF_MISSING;
		}
	}
	for (size_t sl = 0; sl < s->n_slices; sl++) {
		for (int j = 0; j < 3; j++) {
			const char *n = s->mname[M_SLICE_REQ + j];
			if (n)
				sc->has_slice[j][sl] = get_value(doc, n, &s->match, s->slice_label,
								 s->slice_name[sl], AGG_SUM,
								 &sc->slice[j][sl], NULL) == 0;
		}
		for (int j = 0; j < 2; j++) {
			const char *n = s->mname[M_Q_SAMPLES + j];
			if (n)
				sc->has_q[j][sl] = get_value(doc, n, &s->match, s->slice_label,
							     s->slice_name[sl], AGG_SUM, &sc->qv[j][sl],
							     NULL) == 0;
		}
	}
	return 0;
}

/* This scrape's increase of a served cumulative histogram into iv; last
 * keeps the scrape for the next one. True on a counter reset (PromQL rate():
 * the increase is then the new content itself). */
static bool buckets_interval(struct prom_buckets *last, const struct prom_buckets *now,
			     struct prom_buckets *iv)
{
	bool reset = false;
	if (last->n)
		reset = prom_buckets_delta(iv, now, last);
	else
		*iv = *now; /* first scrape: everything so far */
	*last = *now;
	return reset;
}

/* Plausibility bounds on what a server may report (docs/serving-integration.md,
 * "Plausibility"): counters are exact integers in a double up to 2^53, no
 * server runs or queues ten million requests at once, no latency bucket
 * bound beyond a day measures a request, and a KV cache is at most full. */
#define SV_COUNTER_MAX 9007199254740992.0
#define SV_GAUGE_MAX 1e7
#define SV_LATENCY_MAX_MS 86400e3
#define SV_RATIO_MAX 1.0

static bool bad_count(double v, double max)
{
	return !isfinite(v) || v < 0 || v > max;
}

/* The one judgement of a scrape's values before anything of it counts:
 * true (and fault_msg naming the endpoint, metric and value) when one is
 * implausible. */
static bool scrape_implausible(struct sv *s, const char *url, const struct scrape *sc)
{
	const char *what = NULL, *name = NULL;
	double v = 0;
	for (int i = 0; i < H_N && !what; i++) {
		const struct prom_buckets *b = &sc->h[i];
		if (!sc->has_h[i])
			continue;
		name = s->mname[M_TTFT + i];
		for (size_t k = 0; k < b->n && !what; k++) {
			if (k + 1 < b->n && !(b->le[k] * sc->h_unit_ms[i] <= SV_LATENCY_MAX_MS) &&
			    (v = b->le[k], true))
				what = "bucket bound above a day";
			else if (bad_count(b->cum[k], SV_COUNTER_MAX) && (v = b->cum[k], true))
				what = "bucket count";
		}
		if (!what && bad_count(b->count, SV_COUNTER_MAX) && (v = b->count, true))
			what = "_count";
		if (!what && bad_count(b->sum, INFINITY) && (v = b->sum, true))
			what = "_sum";
	}
	static const int counters[] = { M_REQ, M_TOK, M_DUR, M_QDUR, M_INT8_TOK };
	for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]) && !what; k++)
		if (sc->has[counters[k]] && bad_count(v = sc->val[counters[k]], SV_COUNTER_MAX)) {
			what = "counter";
			name = s->mname[counters[k]];
		}
	static const int gauges[] = { M_RUN, M_WAIT, M_KV };
	for (size_t k = 0; k < sizeof(gauges) / sizeof(gauges[0]) && !what; k++)
		if (sc->has[gauges[k]] &&
		    bad_count(v = sc->val[gauges[k]], gauges[k] == M_KV ? SV_RATIO_MAX : SV_GAUGE_MAX)) {
			what = "gauge";
			name = s->mname[gauges[k]];
		}
	for (size_t sl = 0; sl < s->n_slices && !what; sl++) {
		for (int j = 0; j < 3 && !what; j++)
			if (sc->has_slice[j][sl] && bad_count(v = sc->slice[j][sl], SV_COUNTER_MAX)) {
				what = "slice counter";
				name = s->mname[M_SLICE_REQ + j];
			}
		for (int j = 0; j < 2 && !what; j++)
			if (sc->has_q[j][sl] && bad_count(v = sc->qv[j][sl], SV_COUNTER_MAX)) {
				what = "quality counter";
				name = s->mname[M_Q_SAMPLES + j];
			}
	}
	if (!what)
		return false;
	snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: %s %.80s = %g: implausible, scrape not counted",
		 url, what, name ? name : "?", v);
	return true;
}

/* A quality counter's increase this scrape beyond quality_max_samples is
 * no evaluator's: the counter is re-based (the increase dropped), and the
 * fault clears with the next plausible increase. */
static bool quality_counter_update(struct sv *s, struct prom_counter *c, double raw, bool *reset)
{
	if (c->have && raw >= c->last_raw && raw - c->last_raw > (double)s->q_max_samples) {
		c->last_raw = raw;
		return false;
	}
	*reset |= prom_counter_update(c, raw);
	return true;
}

/* The replicas' increases of histogram i into h: summed bucket by bucket
 * when every replica has the same bounds and unit (PromQL sum by (le) of
 * the increases), else each replica's increase on its own (the log buckets
 * take any bounds; unmerged says so). */
static void add_intervals(struct sv *s, int i, const struct prom_buckets *iv, const struct scrape *sc,
			  size_t n)
{
	struct prom_buckets acc = { .n = 0 };
	double unit = 0;
	bool merged = true;
	for (size_t r = 0; r < n && merged; r++) {
		if (!iv[r].n)
			continue;
		if (unit && sc[r].h_unit_ms[i] != unit)
			merged = false;
		else if (prom_buckets_merge(&acc, &iv[r]))
			merged = false;
		unit = sc[r].h_unit_ms[i];
	}
	if (merged) {
		s->unmerged &= ~BIT(i);
		if (acc.n)
			prom_buckets_to_hist(s->h[i], &acc, unit);
		return;
	}
	s->unmerged |= BIT(i);
	for (size_t r = 0; r < n; r++)
		if (iv[r].n)
			prom_buckets_to_hist(s->h[i], &iv[r], sc[r].h_unit_ms[i]);
}

static uint32_t commit(struct sv *s, const struct scrape *sc, size_t n)
{
	uint32_t faults = 0;
	struct prom_buckets iv[SV_MAX_REPLICAS];
	for (int i = 0; i < H_N; i++) {
		bool any = false;
		for (size_t r = 0; r < n; r++) {
			iv[r].n = 0;
			if (!sc[r].has_h[i])
				continue;
			if (buckets_interval(&s->rep[r].last[i], &sc[r].h[i], &iv[r]))
				faults |= HAL_SVF_RESET;
			any = true;
		}
		if (any) {
			add_intervals(s, i, iv, sc, n);
			s->have_h[i] = true;
		}
	}
	s->running = s->queue_len = 0;
	s->kv_valid = false;
	s->kv_frac = 0;
	bool have_gen = false;
	uint64_t gen = 0;
	for (size_t r = 0; r < n; r++) {
		struct replica *rp = &s->rep[r];
		const struct scrape *c = &sc[r];
		/* Triton: counters of microseconds over the request counter; each
		 * request of the interval enters the e2e (queue time) histogram
		 * at the interval mean */
		for (int j = 0; j < 2; j++) {
			int m = j ? M_QDUR : M_DUR, hi = j ? M_QTIME : M_E2E;
			if (!c->has[m] || !c->has[M_REQ] || c->has_h[hi])
				continue;
			struct prom_buckets b = { .n = 1, .le = { INFINITY }, .cum = { c->val[M_REQ] },
						  .count = c->val[M_REQ], .sum = c->val[m] };
			struct prom_buckets d;
			if (buckets_interval(&rp->last_dur[j], &b, &d))
				faults |= HAL_SVF_RESET;
			if (d.count >= 1 && d.count < 1e15 && d.sum >= 0)
				hist_add(s->h[hi], d.sum / d.count * c->dur_unit_ms[j],
					 (uint64_t)llround(d.count));
			s->have_h[hi] = true;
		}
		if (c->has[M_REQ] && prom_counter_update(&rp->c_req, c->val[M_REQ]))
			faults |= HAL_SVF_RESET;
		if (c->has[M_TOK] && prom_counter_update(&rp->c_tok, c->val[M_TOK]))
			faults |= HAL_SVF_RESET;
		if (c->has[M_INT8_TOK] && prom_counter_update(&rp->c_int8_tok, c->val[M_INT8_TOK]))
			faults |= HAL_SVF_RESET;
		/* gauges add up over the replicas; the KV use is the fullest one */
		if (c->has[M_RUN] && c->val[M_RUN] > 0)
			s->running = sat_add_u64(s->running, counter_u64(c->val[M_RUN]));
		if (c->has[M_WAIT] && c->val[M_WAIT] > 0)
			s->queue_len = sat_add_u64(s->queue_len, counter_u64(c->val[M_WAIT]));
		if (c->has[M_KV]) {
			s->kv_frac = s->kv_valid && s->kv_frac > c->val[M_KV] ? s->kv_frac : c->val[M_KV];
			s->kv_valid = true;
		}
		for (size_t sl = 0; sl < s->n_slices; sl++) {
			for (int j = 0; j < 3; j++)
				if (c->has_slice[j][sl] &&
				    prom_counter_update(&rp->c_slice[j][sl], c->slice[j][sl]))
					faults |= HAL_SVF_RESET;
			bool reset = false, ok = true;
			if (c->has_q[0][sl])
				ok &= quality_counter_update(s, &rp->c_qs[sl], c->qv[0][sl], &reset);
			if (c->has_q[1][sl])
				ok &= quality_counter_update(s, &rp->c_qm[sl], c->qv[1][sl], &reset);
			if (reset)
				faults |= HAL_SVF_RESET;
			if (!ok) {
				faults |= HAL_SVF_IMPLAUSIBLE;
				s->q_scrape_implausible = true;
				snprintf(s->fault_msg, sizeof(s->fault_msg),
					 "%s: slice %s: quality counters rose by more than quality_max_samples "
					 "(%llu) in one read: not counted", rp->url, s->slice_name[sl],
					 (unsigned long long)s->q_max_samples);
			}
		}
		/* the generation every replica applied: the lowest one reported */
		if (c->has[M_CONFIRM] && c->val[M_CONFIRM] >= 0 && c->val[M_CONFIRM] < 9e18) {
			uint64_t g = (uint64_t)c->val[M_CONFIRM];
			gen = have_gen && gen < g ? gen : g;
			have_gen = true;
		}
	}
	if (have_gen)
		s->gen_applied = gen;
	return faults;
}

/* One scrape of every endpoint (bodies: recorded texts instead of GETs);
 * returns the fault bits (0: good, state committed). Any endpoint's fault
 * fails the whole scrape: nothing of it counts. */
static uint32_t scrape_from(struct sv *s, uint64_t deadline_ms, const char *const *bodies,
			    const size_t *lens)
{
	s->fault_msg[0] = '\0';
	s->have_scrape = true;
	s->scraped_since_quality = true;
	s->last_ok = false;
	struct scrape *sc = calloc(s->n_rep, sizeof(*sc));
	if (!sc) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "out of memory");
		return HAL_SVF_PARSE;
	}
	uint32_t f = 0;
	for (size_t r = 0; r < s->n_rep && !f; r++) {
		const char *url = s->rep[r].url, *body;
		size_t len;
		if (bodies) {
			body = bodies[r];
			len = lens[r];
		} else {
			if ((f = http_get(s, url, deadline_ms)))
				break;
			body = s->body;
			len = s->body_len;
		}
		struct prom_doc doc;
		struct prom_error perr;
		int rc = prom_parse(body, len, &doc, &perr);
		if (rc) {
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: %s", url,
				 rc == -ENOMEM ? "out of memory" : perr.msg);
			f = HAL_SVF_PARSE;
			break;
		}
		f = extract(s, url, &doc, &sc[r]);
		prom_doc_free(&doc);
		if (!f && scrape_implausible(s, url, &sc[r]))
			f = HAL_SVF_IMPLAUSIBLE;
	}
	if (!f) {
		f = commit(s, sc, s->n_rep);
		s->last_ok = true;
	}
	free(sc);
	return f;
}

static uint32_t scrape(struct sv *s, uint64_t deadline_ms)
{
	return scrape_from(s, deadline_ms, NULL, NULL);
}

/* Applied generation from confirm_url / confirm_file (the metric comes with the scrape). */
static void confirm_read(struct sv *s, uint64_t deadline_ms)
{
	uint64_t g;
	if (s->confirm_url) {
		char keep[sizeof(s->fault_msg)];
		memcpy(keep, s->fault_msg, sizeof(keep));
		if (!http_get(s, s->confirm_url, deadline_ms) &&
		    !pact_parse_applied(s->body, s->body_len, s->confirm_field, &g))
			s->gen_applied = g;
		memcpy(s->fault_msg, keep, sizeof(keep));
	}
	if (s->confirm_file && !pact_read_applied_file(s->confirm_file, s->confirm_field, &g))
		s->gen_applied = g;
}

static bool confirm_configured(const struct sv *s)
{
	return s->mname[M_CONFIRM] || s->confirm_url || s->confirm_file;
}

static uint32_t confirm_check(struct sv *s, uint64_t now, uint64_t deadline_ms, char *msg, size_t len)
{
	if (!s->act_on || !confirm_configured(s))
		return 0;
	confirm_read(s, deadline_ms);
	if (s->gen_set == 0) {
		/* nothing sent by this run yet: continue the server's sequence */
		if (s->gen_applied > s->act.generation)
			s->act.generation = s->gen_applied;
		return 0;
	}
	if (s->gen_applied == s->gen_set)
		return 0;
	if (s->gen_applied > s->gen_set) {
		snprintf(msg, len, "server reports precision generation %llu applied, last sent %llu",
			 (unsigned long long)s->gen_applied, (unsigned long long)s->gen_set);
		return HAL_SVF_ACTUATION;
	}
	if (now - s->t_set_ms >= s->confirm_grace_ms) {
		snprintf(msg, len, "precision generation %llu not applied after %llu ms (server reports %llu)",
			 (unsigned long long)s->gen_set, (unsigned long long)(now - s->t_set_ms),
			 (unsigned long long)s->gen_applied);
		return HAL_SVF_ACTUATION;
	}
	return 0;
}

/* A counter of every replica together: the member at byte offset off of
 * struct replica. */
static uint64_t rep_total(const struct sv *s, size_t off)
{
	double t = 0;
	for (size_t r = 0; r < s->n_rep; r++)
		t += ((const struct prom_counter *)(const void *)((const char *)&s->rep[r] + off))->total;
	return counter_u64(t);
}

static size_t slice_off(int j, size_t sl)
{
	return offsetof(struct replica, c_slice) + ((size_t)j * HAL_MAX_SLICES + sl) * sizeof(struct prom_counter);
}

/* What read_serving returns of the state (the scrape's faults f). */
static void fill_serving(const struct sv *s, uint32_t f, uint64_t now, struct hal_serving *out)
{
	memset(out, 0, sizeof(*out));
	out->t_ms = now;
	out->valid = s->last_ok;
	out->fault_bits = f;
	out->requests_completed = rep_total(s, offsetof(struct replica, c_req));
	out->tokens_generated = rep_total(s, offsetof(struct replica, c_tok));
	out->tokens_int8 = rep_total(s, offsetof(struct replica, c_int8_tok));
	out->queue_len = s->queue_len;
	out->running = s->running;
	out->ttft = s->h[M_TTFT];
	out->tbt = s->h[M_TBT];
	out->e2e = s->h[M_E2E];
	out->queue_time = s->have_h[M_QTIME] ? s->h[M_QTIME] : NULL;
	out->kv_usage_valid = s->kv_valid;
	out->kv_usage_frac = s->kv_valid ? s->kv_frac : 0;
	out->n_replicas = s->n_rep;
	out->n_slices = s->n_slices;
	for (size_t i = 0; i < s->n_slices; i++) {
		memcpy(out->slice_name[i], s->slice_name[i], HAL_NAME_LEN);
		out->slice_completed[i] = rep_total(s, slice_off(0, i));
		out->slice_int8_completed[i] = rep_total(s, slice_off(1, i));
		out->slice_tokens_int8[i] = rep_total(s, slice_off(2, i));
	}
	out->precision_gen_set = s->gen_set;
	out->precision_gen_applied = s->gen_applied;
	out->fault_msg = s->fault_msg[0] ? s->fault_msg : NULL;
}

static int sv_read_serving(struct hal_dev *dev, struct hal_serving *out);

int hal_serving_replay(struct hal_dev *dev, const char *const *bodies, const size_t *lens, size_t n,
		       struct hal_serving *out)
{
	if (!dev || !dev->priv || !dev->ops || dev->ops->read_serving != sv_read_serving || !out ||
	    !bodies || !lens)
		return -EINVAL;
	struct sv *s = dev->priv;
	if (n != s->n_rep)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!bodies[i])
			return -EINVAL;
	uint32_t f = scrape_from(s, 0, bodies, lens);
	fill_serving(s, f, govd_clock_now_or_mono_ms(s->clock), out);
	return 0;
}

/* haproxy: once per period, the process and the weights checked and the
 * next bounded step taken; a lost socket, a restart or weights changed
 * behind govd is an actuation fault (the slices go to the full-precision
 * server where the socket still answers). */
static uint32_t hap_tick(struct sv *s, char *msg, size_t len)
{
	if (!hap_check(s->hap))
		return 0;
	snprintf(msg, len, "%.*s", (int)(len ? len - 1 : 0), s->hap->err);
	return HAL_SVF_ACTUATION;
}

static int sv_read_serving(struct hal_dev *dev, struct hal_serving *out)
{
	struct sv *s = dev->priv;
	if (!s || !out)
		return -EINVAL;
	/* scrape and confirmation GET share one timeout_ms: the read fits the period */
	uint64_t deadline = govd_mono_ms() + s->timeout_ms;
	uint32_t f = scrape(s, deadline);
	uint64_t now = govd_clock_now_or_mono_ms(s->clock);
	fill_serving(s, f, now, out);
	char cmsg[300] = "";
	uint32_t cf = s->hap ? hap_tick(s, cmsg, sizeof(cmsg))
			     : confirm_check(s, now, deadline, cmsg, sizeof(cmsg));
	if (cf) {
		out->fault_bits |= cf;
		size_t fl = strlen(s->fault_msg);
		if (!fl)
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%s", cmsg);
		else if (s->hap && fl + 3 < sizeof(s->fault_msg)) /* the router's fault is news too */
			snprintf(s->fault_msg + fl, sizeof(s->fault_msg) - fl, "; %s", cmsg);
	}
	out->precision_gen_set = s->gen_set;
	out->precision_gen_applied = s->gen_applied;
	out->fault_msg = s->fault_msg[0] ? s->fault_msg : NULL;
	return 0;
}

/* ---- quality ---- */

static int slice_index(const struct sv *s, const char *name)
{
	for (size_t i = 0; i < s->n_slices; i++)
		if (!strcmp(s->slice_name[i], name))
			return (int)i;
	return -1;
}

/* One evaluator datagram; false (and qfault_msg) if malformed or, with
 * *implausible, over the read's bound. */
static bool quality_msg(struct sv *s, const char *buf, size_t len, bool *implausible)
{
	json_error_t jerr;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	bool ok = false;
	if (!root) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: %s at column %d",
			 jerr.text, jerr.column);
		return false;
	}
	json_t *js = json_object_get(root, "slice");
	json_t *jn = json_object_get(root, "samples"), *jm = json_object_get(root, "mismatches");
	json_t *jd = json_object_get(root, "delta");
	int idx = json_is_string(js) ? slice_index(s, json_string_value(js)) : -1;
	if (!json_is_object(root) || !json_is_string(js)) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: needs a \"slice\" string");
		goto out_free;
	}
	if (idx < 0) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: unknown slice '%.48s'",
			 json_string_value(js));
		goto out_free;
	}
	if (!jn && !jd) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "quality datagram: needs \"samples\" (and \"mismatches\") or \"delta\"");
		goto out_free;
	}
	json_int_t n = 0, m = 0;
	if (jn || jm) {
		if (!json_is_integer(jn) || (jm && !json_is_integer(jm)) ||
		    (n = json_integer_value(jn)) < 0 || (m = jm ? json_integer_value(jm) : 0) < 0 ||
		    m > n) {
			snprintf(s->qfault_msg, sizeof(s->qfault_msg),
				 "quality datagram: samples and mismatches must be integers, 0 <= mismatches <= samples");
			goto out_free;
		}
	}
	if (jd && (!json_is_number(jd) || !isfinite(json_number_value(jd)))) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: delta must be a number");
		goto out_free;
	}
	/* Bounded before it counts: one read (one period) takes at most
	 * quality_max_samples per slice from the datagrams together; a datagram
	 * that would pass it is dropped whole. The bound keeps the sums far
	 * from wrapping; the adds saturate all the same. */
	if ((uint64_t)n > s->q_max_samples - s->q_read_sock[idx]) {
		*implausible = true;
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "quality datagram: slice %s: %lld samples would pass quality_max_samples "
			 "(%llu) this read (%llu so far): dropped", s->slice_name[idx], (long long)n,
			 (unsigned long long)s->q_max_samples, (unsigned long long)s->q_read_sock[idx]);
		goto out_free;
	}
	s->q_read_sock[idx] += (uint64_t)n;
	s->qs_sock[idx] = sat_add_u64(s->qs_sock[idx], (uint64_t)n);
	s->qm_sock[idx] = sat_add_u64(s->qm_sock[idx], (uint64_t)m);
	if (jd)
		s->qdelta[idx] = json_number_value(jd);
	ok = true;
out_free:
	json_decref(root);
	return ok;
}

static uint32_t quality_drain(struct sv *s)
{
	if (s->qfd < 0)
		return 0;
	uint32_t f = 0;
	char buf[Q_DGRAM_MAX];
	for (int i = 0; i < Q_DRAIN_MAX; i++) {
		ssize_t n = recv(s->qfd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: drained */
		}
		bool ok, implausible = false;
		if ((size_t)n > sizeof(buf)) {
			snprintf(s->qfault_msg, sizeof(s->qfault_msg),
				 "quality datagram of %zd bytes (at most %d)", n, Q_DGRAM_MAX);
			ok = false;
		} else {
			ok = quality_msg(s, buf, (size_t)n, &implausible);
		}
		if (implausible) {
			s->implausible++;
			f |= HAL_SVF_IMPLAUSIBLE;
		} else if (!ok) {
			s->malformed++;
			f |= HAL_SVF_QUALITY_MSG;
		}
	}
	return f;
}

static bool quality_from_scrape(const struct sv *s)
{
	return s->mname[M_Q_SAMPLES] || s->mname[M_Q_MISM];
}

static int sv_read_quality(struct hal_dev *dev, struct hal_quality *out)
{
	struct sv *s = dev->priv;
	if (!s || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	s->qfault_msg[0] = '\0';
	uint32_t f = 0;
	bool valid = true;
	memset(s->q_read_sock, 0, sizeof(s->q_read_sock));
	if (quality_from_scrape(s)) {
		/* read_serving usually scraped this period already */
		if (!s->scraped_since_quality)
			f |= scrape(s, govd_mono_ms() + s->timeout_ms) & ~HAL_SVF_RESET;
		valid = s->last_ok;
		if (!valid)
			snprintf(s->qfault_msg, sizeof(s->qfault_msg), "%.180s", s->fault_msg);
		s->scraped_since_quality = false;
	} else if (s->qfd < 0) {
		valid = false;
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "no quality source (quality_socket or quality_*_metric)");
	}
	if (s->q_scrape_implausible) {
		f |= HAL_SVF_IMPLAUSIBLE;
		if (!s->qfault_msg[0])
			snprintf(s->qfault_msg, sizeof(s->qfault_msg), "%.180s", s->fault_msg);
		s->q_scrape_implausible = false;
	}
	f |= quality_drain(s);
	out->t_ms = govd_clock_now_or_mono_ms(s->clock);
	out->valid = valid;
	out->n_slices = s->n_slices;
	for (size_t i = 0; i < s->n_slices; i++) {
		size_t qs = offsetof(struct replica, c_qs) + i * sizeof(struct prom_counter);
		size_t qm = offsetof(struct replica, c_qm) + i * sizeof(struct prom_counter);
		out->samples[i] = sat_add_u64(rep_total(s, qs), s->qs_sock[i]);
		out->mismatches[i] = sat_add_u64(rep_total(s, qm), s->qm_sock[i]);
		out->delta[i] = s->qdelta[i];
		if (!isnan(s->qdelta[i]))
			out->delta_valid |= 1u << i;
	}
	for (size_t i = s->n_slices; i < HAL_MAX_SLICES; i++)
		out->delta[i] = NAN;
	out->malformed = s->malformed;
	out->fault_bits = f;
	out->fault_msg = s->qfault_msg[0] ? s->qfault_msg : NULL;
	return 0;
}

/* ---- precision ---- */

static int sv_write_doc(struct sv *s, const double *int8_frac, const double *shadow);

static int sv_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct sv *s = dev->priv;
	if (!s || (!int8_frac && n_slices))
		return -EINVAL;
	if (!s->act_on)
		return -ENOTSUP;
	if (n_slices != s->n_slices)
		return -EINVAL;
	for (size_t i = 0; i < n_slices; i++)
		if (!(int8_frac[i] >= 0.0 && int8_frac[i] <= 1.0))
			return -EINVAL; /* NaN too; nothing sent (as the sim backend) */
	if (s->hap) {
		int hrc = hap_apply(s->hap, int8_frac, n_slices);
		if (hrc)
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%.300s", s->hap->err);
		return hrc;
	}
	return sv_write_doc(s, int8_frac, s->shadow_sent);
}

/* One precision document (file/http/exec) with both halves. */
static int sv_write_doc(struct sv *s, const double *int8_frac, const double *shadow)
{
	const char *names[HAL_MAX_SLICES];
	for (size_t i = 0; i < s->n_slices; i++)
		names[i] = s->slice_name[i];
	int rc = pact_apply(&s->act, names, int8_frac, shadow, s->n_slices, wall_ms());
	s->gen_set = s->act.generation;
	s->t_set_ms = govd_clock_now_or_mono_ms(s->clock);
	if (rc) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "%s", s->act.err);
		return rc;
	}
	s->prec_written = true;
	memmove(s->int8_sent, int8_frac, s->n_slices * sizeof(double));
	memmove(s->shadow_sent, shadow, s->n_slices * sizeof(double));
	return 0;
}

static int sv_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices)
{
	struct sv *s = dev->priv;
	if (!s || (!rate && n_slices))
		return -EINVAL;
	if (!s->act_on || s->hap)
		return -ENOTSUP; /* HAProxy's weights carry no shadow rate */
	if (n_slices != s->n_slices)
		return -EINVAL;
	for (size_t i = 0; i < n_slices; i++)
		if (!(rate[i] >= 0.0 && rate[i] <= 1.0))
			return -EINVAL;
	return sv_write_doc(s, s->int8_sent, rate);
}

/* The server as govd may assume it ran before it: BF16 on every slice
 * through a file/http/exec actuator (it cannot read the server's own
 * setting back), the router's original weights with HAProxy. */
static int sv_restore(struct hal_dev *dev)
{
	struct sv *s = dev->priv;
	if (!s->act_on)
		return 0;
	if (s->hap) {
		int hrc = hap_restore(s->hap);
		if (hrc)
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%.300s", s->hap->err);
		return hrc;
	}
	if (!s->prec_written)
		return 0;
	const double zero[HAL_MAX_SLICES] = { 0 };
	int rc = sv_write_doc(s, zero, zero);
	if (!rc)
		s->prec_written = false;
	return rc;
}

/* The router or precision actuator it writes, and the power side's own. */
static size_t sv_writer_ids(struct hal_dev *dev, char (*ids)[HAL_ID_LEN], size_t max)
{
	struct sv *s = dev->priv;
	size_t n = 0;
	if (s->hap) /* the router's backends, each written by one device */
		for (size_t i = 0; i < s->hap->cfg.n_slices && n < max; i++)
			snprintf(ids[n++], HAL_ID_LEN, "haproxy:%.180s#%.60s", s->hap->real,
				 s->hap->names[i][0]);
	else if (n < max && s->act_on && s->act.target) {
		char real[PATH_MAX];
		const char *t = s->act.target;
		if (s->act.kind == PACT_FILE && realpath(t, real))
			t = real;
		snprintf(ids[n++], HAL_ID_LEN, "precision:%.240s", t);
	}
	if (s->has_inner && s->inner.ops->writer_ids)
		n += s->inner.ops->writer_ids(&s->inner, ids + n, max - n);
	return n;
}

#define SV_OPS(prec, shadow, qual)             \
	{                                      \
		.name = "serving",             \
		.set_shadow_rate = shadow,     \
		.open = sv_open,               \
		.check_options = sv_check_options, \
		.close = sv_close,             \
		.get_limits = sv_get_limits,   \
		.sample = sv_sample,           \
		.read_serving = sv_read_serving, \
		.read_quality = qual,          \
		.set_precision = prec,         \
		.restore = sv_restore,         \
		.writer_ids = sv_writer_ids,   \
	}

const struct hal_ops hal_serving_ops = SV_OPS(sv_set_precision, sv_set_shadow_rate, sv_read_quality);
/* Capabilities follow the options: without an actuator or a quality source
 * the device offers no set_precision / read_quality (hal_can_*() false). */
static const struct hal_ops sv_ops_variant[2][2] = {
	{ SV_OPS(NULL, NULL, NULL), SV_OPS(NULL, NULL, sv_read_quality) },
	{ SV_OPS(sv_set_precision, sv_set_shadow_rate, NULL),
	  SV_OPS(sv_set_precision, sv_set_shadow_rate, sv_read_quality) },
};

/* ---- the power side (power_backend) ---- */

static struct hal_dev *inner_of(struct hal_dev *dev)
{
	return &((struct sv *)dev->priv)->inner;
}

static int pw_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->get_limits(in, out);
}

static void shift(struct hal_value *v, uint64_t d)
{
	v->t_ms += d;
}

static int pw_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct sv *s = dev->priv;
	struct hal_dev *in = &s->inner;
	if (s->inner_sim) {
		uint64_t now = govd_clock_now_or_mono_ms(s->clock);
		int rc = govd_clock_wait_until(&s->pclk, now > s->t0_ms ? now - s->t0_ms : 0);
		if (rc)
			return rc; /* -EHOSTDOWN: the plant shut down (thermal) */
	}
	int rc = in->ops->sample(in, out);
	if (rc || !s->inner_sim)
		return rc;
	/* plant time (from 0 at open) onto the device's clock */
	uint64_t d = s->t0_ms;
	out->t_ms += d;
	for (int i = 0; i < HAL_RAIL_N; i++) {
		shift(&out->power_mw[i], d);
		shift(&out->energy_mj[i], d);
	}
	for (int i = 0; i < HAL_TEMP_N; i++)
		shift(&out->temp_mc[i], d);
	shift(&out->clk_khz, d);
	shift(&out->power_limit_mw, d);
	shift(&out->util_pct, d);
	return 0;
}

static int pw_set_clock_range(struct hal_dev *dev, uint32_t min_khz, uint32_t max_khz)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->set_clock_range(in, min_khz, max_khz);
}

static int pw_reset_clocks(struct hal_dev *dev)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->reset_clocks(in);
}

static int pw_set_power_limit(struct hal_dev *dev, uint32_t limit_mw)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->set_power_limit(in, limit_mw);
}

static int pw_get_original(struct hal_dev *dev, char *json, size_t len)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->get_original(in, json, len);
}

static const char *pw_last_error(struct hal_dev *dev)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->last_error(in);
}

static int pw_alert_fd(struct hal_dev *dev)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->alert_fd(in);
}

static int pw_alert_read(struct hal_dev *dev, struct hal_alert *ev)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->alert_read(in, ev);
}

static int pw_set_brake(struct hal_dev *dev, bool on)
{
	struct hal_dev *in = inner_of(dev);
	return in->ops->set_brake(in, on);
}

/* The server's side, then the power side's own restore. */
static int pw_restore(struct hal_dev *dev)
{
	struct sv *s = dev->priv;
	int rc = sv_restore(dev);
	if (hal_can_restore(&s->inner)) {
		int r = s->inner.ops->restore(&s->inner);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/* The server's document first; the plant's share only if the server took it. */
static int pw_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_set_precision(dev, int8_frac, n_slices);
	if (!rc && s->fwd_precision)
		s->inner.ops->set_precision(&s->inner, int8_frac, n_slices);
	return rc;
}

static int pw_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_set_shadow_rate(dev, rate, n_slices);
	if (!rc && s->fwd_precision && s->inner.ops->set_shadow_rate)
		s->inner.ops->set_shadow_rate(&s->inner, rate, n_slices);
	return rc;
}

/* haproxy: the weights found at open, for the state file, in the generic
 * record's shape (the restore reopens the device and sets BF16) plus the
 * router's servers, which close() then puts back. */
static int hap_get_original(struct hal_dev *dev, char *json, size_t len)
{
	struct sv *s = dev->priv;
	char *h = hap_original_json(s->hap);
	if (!h)
		return -ENOMEM;
	int n = snprintf(json, len,
			 "{\"generic\":true,\"power_limit_mw\":null,\"locked_clocks\":\"reset\","
			 "\"int8_slices\":%zu,\"haproxy\":%s}",
			 s->n_slices, h);
	free(h);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static int hap_adopt(struct hal_dev *dev, const char *json)
{
	struct sv *s = dev->priv;
	json_t *o = json_loads(json, 0, NULL);
	char *h = o ? json_dumps(json_object_get(o, "haproxy"), JSON_COMPACT) : NULL;
	int rc = h ? hap_adopt_original(s->hap, h) : -EINVAL;
	free(h);
	json_decref(o);
	return rc;
}

static const char *hap_last_error(struct hal_dev *dev)
{
	struct sv *s = dev->priv;
	return s->hap->err;
}

static void sv_pick_ops(struct hal_dev *dev, struct sv *s)
{
	bool q = s->qfd >= 0 || quality_from_scrape(s);
	dev->ops = &sv_ops_variant[s->act_on][q];
	if (s->hap && !s->has_inner) {
		s->ops = *dev->ops;
		s->ops.get_original = hap_get_original;
		s->ops.adopt_original = hap_adopt;
		s->ops.last_error = hap_last_error;
		s->ops.set_shadow_rate = NULL; /* weights carry no shadow rate */
		dev->ops = &s->ops;
		return;
	}
	if (!s->has_inner)
		return;
	/* a per-device table: the capabilities are the power side's */
	struct sv *w = s;
	const struct hal_ops *io = s->inner.ops;
	w->ops = *dev->ops;
	w->ops.get_limits = pw_get_limits;
	w->ops.sample = pw_sample;
	w->ops.set_clock_range = io->set_clock_range ? pw_set_clock_range : NULL;
	w->ops.reset_clocks = io->reset_clocks ? pw_reset_clocks : NULL;
	w->ops.set_power_limit = io->set_power_limit ? pw_set_power_limit : NULL;
	w->ops.get_original = io->get_original ? pw_get_original : NULL;
	w->ops.last_error = io->last_error ? pw_last_error : NULL;
	w->ops.alert_fd = io->alert_fd ? pw_alert_fd : NULL;
	w->ops.alert_read = io->alert_read ? pw_alert_read : NULL;
	w->ops.set_brake = io->set_brake ? pw_set_brake : NULL;
	if (w->ops.set_precision)
		w->ops.set_precision = pw_set_precision;
	if (w->ops.set_shadow_rate)
		w->ops.set_shadow_rate = s->hap ? NULL : pw_set_shadow_rate;
	w->ops.restore = pw_restore;
	if (s->hap && !io->get_original && !io->adopt_original) {
		/* a power side without its own record (the sim): the router's */
		w->ops.get_original = hap_get_original;
		w->ops.adopt_original = hap_adopt;
	}
	dev->ops = &w->ops;
}
