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

enum fmt { FMT_VLLM, FMT_TRITON, FMT_GENERIC };

/* Metrics the backend reads; option key "<key>_metric" names each. */
enum metric {
	M_TTFT,
	M_TBT,
	M_E2E,
	M_REQ,
	M_TOK,
	M_RUN,
	M_WAIT,
	M_DUR,   /* cumulative request time counter (Triton, us) */
	M_INT8_TOK,
	M_SLICE_REQ,
	M_SLICE_INT8_REQ,
	M_SLICE_INT8_TOK,
	M_Q_SAMPLES,
	M_Q_MISM,
	M_CONFIRM,
	M_N
};

static const char *const metric_key[M_N] = {
	"ttft_metric",	   "tbt_metric",	   "e2e_metric",		"requests_metric",
	"tokens_metric",   "running_metric",	   "waiting_metric",		"duration_metric",
	"int8_tokens_metric", "slice_requests_metric",
	"slice_int8_requests_metric", "slice_int8_tokens_metric", "quality_samples_metric",
	"quality_mismatches_metric", "confirm_metric",
};

struct fmt_defaults {
	const char *name[M_N]; /* "a|b": the first family present wins */
	bool required[M_N];
	double hist_unit_ms;
	double counter_unit_ms; /* M_DUR */
};

/* vLLM: docs/design/metrics.md and docs/usage/metrics.md of vllm-project/vllm;
 * Triton: docs/user_guide/metrics.md of triton-inference-server/server. */
static const struct fmt_defaults defaults[] = {
	[FMT_VLLM] = {
		.name = {
			[M_TTFT] = "vllm:time_to_first_token_seconds",
			[M_TBT] = "vllm:inter_token_latency_seconds|vllm:time_per_output_token_seconds",
			[M_E2E] = "vllm:e2e_request_latency_seconds",
			[M_REQ] = "vllm:request_success_total",
			[M_TOK] = "vllm:generation_tokens_total",
			[M_RUN] = "vllm:num_requests_running",
			[M_WAIT] = "vllm:num_requests_waiting",
		},
		.required = { [M_TTFT] = true, [M_TBT] = true, [M_E2E] = true, [M_REQ] = true,
			      [M_TOK] = true, [M_RUN] = true, [M_WAIT] = true },
		.hist_unit_ms = 1000.0,
		.counter_unit_ms = 1000.0,
	},
	[FMT_TRITON] = {
		.name = {
			[M_TTFT] = "nv_inference_first_response_histogram_ms",
			[M_REQ] = "nv_inference_request_success",
			[M_TOK] = "nv_inference_count",
			[M_WAIT] = "nv_inference_pending_request_count",
			[M_DUR] = "nv_inference_request_duration_us",
		},
		.required = { [M_REQ] = true, [M_DUR] = true },
		.hist_unit_ms = 1.0,
		.counter_unit_ms = 0.001,
	},
	[FMT_GENERIC] = {
		.hist_unit_ms = 1000.0,
		.counter_unit_ms = 1000.0,
	},
};

#define Q_DGRAM_MAX 4096
#define Q_DRAIN_MAX 1024

struct sv {
	char *url;
	enum fmt fmt;
	struct prom_matcher match;
	uint32_t timeout_ms;
	size_t max_bytes;
	char *mname[M_N];
	bool required[M_N];
	double hist_unit_ms, counter_unit_ms;
	char *slice_label;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];

	CURL *curl;
	char *body;
	size_t body_len, body_cap;
	bool body_over;

	/* cumulative state, committed per good scrape */
	bool have_scrape, last_ok, scraped_since_quality;
	/* The previous scrape's histograms as served (n == 0: none yet); each
	 * scrape's increase goes into the cumulative h[], whose windows the
	 * governor takes (hist_delta + hist_quantile). */
	struct prom_buckets last[3]; /* ttft, tbt, e2e */
	struct prom_buckets last_dur; /* Triton: count = requests, sum = request time */
	struct hist *h[3];
	struct prom_counter c_req, c_tok, c_int8_tok;
	struct prom_counter c_slice[3][HAL_MAX_SLICES]; /* req, int8 req, int8 tok */
	struct prom_counter c_qs[HAL_MAX_SLICES], c_qm[HAL_MAX_SLICES];
	uint64_t queue_len, running;

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
	"url", "format", "labels", "timeout_ms", "max_bytes", "latency_unit",
	"slices", "slice_label", "quality_socket", "precision", "precision_target",
	"precision_timeout_ms", "precision_retries", "confirm_url", "confirm_file",
	"confirm_field", "confirm_grace_ms", "power_backend", "quality_max_samples",
	"haproxy_backends", "haproxy_server_full", "haproxy_server_low", "haproxy_total_weight",
	"haproxy_max_step", NULL,
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
	for (int i = 0; i < 3; i++)
		free(s->h[i]);
	for (int i = 0; i < M_N; i++)
		free(s->mname[i]);
	free(s->url);
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

static int sv_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	char cerr[160];
	int crc = hal_curl_load(cerr, sizeof(cerr));
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
	const char *v = bopts_str(o, "url", NULL);
	if (!v || strncmp(v, "http", 4) != 0) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.url", v ? "bad-value" : "missing-key",
			 "the metrics endpoint, http://host:port/metrics");
		bad = 1;
	}
	s->url = dup_or_null(v, &oom);
	v = bopts_str(o, "format", NULL);
	if (!v || !strcmp(v, "vllm"))
		s->fmt = FMT_VLLM;
	else if (!strcmp(v, "triton"))
		s->fmt = FMT_TRITON;
	else if (!strcmp(v, "generic"))
		s->fmt = FMT_GENERIC;
	else {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.format", "bad-enum",
			 "'%s' is not one of vllm, triton, generic", v);
		bad = 1;
	}
	char err[200];
	if (prom_matcher_parse(bopts_str(o, "labels", NULL), &s->match, err, sizeof(err))) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.labels", "bad-value", "%s", err);
		bad = 1;
	}
	uint64_t timeout_ms = 500, max_bytes = 8u << 20, ptimeout = 0,
		 pretries = 0, grace = 5000;
	bad |= bopts_u64(o, "timeout_ms", 10, 600000, timeout_ms, &timeout_ms) != 0;
	bad |= bopts_u64(o, "max_bytes", 1024, UINT64_C(1) << 30, max_bytes, &max_bytes) != 0;
	bad |= bopts_u64(o, "precision_timeout_ms", 10, 600000, ptimeout, &ptimeout) != 0;
	bad |= bopts_u64(o, "precision_retries", 0, 10, pretries, &pretries) != 0;
	bad |= bopts_u64(o, "confirm_grace_ms", 0, UINT64_C(86400000), grace, &grace) != 0;
	s->timeout_ms = (uint32_t)timeout_ms;
	s->max_bytes = (size_t)max_bytes;
	s->confirm_grace_ms = grace;
	uint64_t qmax = 10000;
	bad |= bopts_u64(o, "quality_max_samples", 1, UINT64_C(1000000000), qmax, &qmax) != 0;
	s->q_max_samples = qmax;

	const struct fmt_defaults *d = &defaults[s->fmt];
	s->hist_unit_ms = d->hist_unit_ms;
	s->counter_unit_ms = d->counter_unit_ms;
	if ((v = bopts_str(o, "latency_unit", NULL))) {
		if (!strcmp(v, "s"))
			s->hist_unit_ms = 1000.0;
		else if (!strcmp(v, "ms"))
			s->hist_unit_ms = 1.0;
		else if (!strcmp(v, "us"))
			s->hist_unit_ms = 0.001;
		else {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.latency_unit", "bad-enum",
				 "'%s' is not one of s, ms, us", v);
			bad = 1;
		}
	}
	for (int m = 0; m < M_N; m++) {
		const char *user = bopts_str(o, metric_key[m], NULL);
		const char *name = user ? user : d->name[m];
		if (name && !*name)
			name = NULL; /* "" switches a default off */
		s->mname[m] = dup_or_null(name, &oom);
		s->required[m] = name && (user || d->required[m]);
	}
	/* per-slice metrics are matched per slice; absence is not a fault */
	for (int m = M_SLICE_REQ; m <= M_Q_MISM; m++)
		s->required[m] = false;
	s->required[M_CONFIRM] = false;
	s->slice_label = dup_or_null(bopts_str(o, "slice_label", "slice"), &oom);
	if ((v = bopts_str(o, "slices", NULL)) && parse_slices(s, cfg, v, diags))
		bad = 1;

	enum pact_kind pk = PACT_NONE;
	bool haproxy = (v = bopts_str(o, "precision", NULL)) && !strcmp(v, "haproxy");
	if (v && !haproxy && pact_kind_parse(v, &pk)) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.precision", "bad-enum",
			 "'%s' is not one of file, http, exec, haproxy, none", v);
		bad = 1;
	}
	if ((pk != PACT_NONE || haproxy) && !bopts_str(o, "precision_target", NULL)) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.precision_target", "missing-key",
			 "precision: %s needs precision_target (a path, URL, command or, for "
			 "haproxy, the stats socket)", v);
		bad = 1;
	}
	struct hap_cfg hc = { 0 };
	uint64_t hap_total = 100, hap_step = 25;
	bad |= bopts_u64(o, "haproxy_total_weight", 1, HAP_WEIGHT_MAX, hap_total, &hap_total) != 0;
	bad |= bopts_u64(o, "haproxy_max_step", 1, HAP_WEIGHT_MAX, hap_step, &hap_step) != 0;
	if (!haproxy) {
		static const char *const hk[] = { "haproxy_backends", "haproxy_server_full",
						  "haproxy_server_low", "haproxy_total_weight",
						  "haproxy_max_step" };
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
						   &hc, diags))
		bad = 1;
	if ((pk != PACT_NONE || haproxy) && s->n_slices == 0) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.slices", "missing-key",
			 "a precision actuator needs the slice names (slices: code,chat)");
		bad = 1;
	}
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
	if (bad) {
		sv_free(s);
		return -EINVAL;
	}
	int rc = -ENOMEM;
	for (int i = 0; i < 3; i++) {
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
			       .timeout_ms = (uint32_t)(ptimeout ? ptimeout : timeout_ms),
			       .retries = (unsigned)pretries };
	if ((rc = pact_init(&s->act, &pc)))
		goto out_free;
	s->act_on = pk != PACT_NONE;
	if (haproxy) {
		hc.socket_path = bopts_str(o, "precision_target", NULL);
		hc.n_slices = s->n_slices;
		hc.total_weight = (unsigned)hap_total;
		hc.max_step = (unsigned)hap_step;
		hc.timeout_ms = (uint32_t)(ptimeout ? ptimeout : timeout_ms);
		const char *full = bopts_str(o, "haproxy_server_full", "bf16");
		const char *low = bopts_str(o, "haproxy_server_low", "fp8");
		for (size_t i = 0; i < s->n_slices; i++) {
			hc.slice[i].server_hi = full;
			hc.slice[i].server_lo = low;
		}
		rc = -ENOMEM;
		if (!(s->hap = calloc(1, sizeof(*s->hap))))
			goto out_free;
		if ((rc = hap_open(s->hap, &hc))) {
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

static void sv_close(struct hal_dev *dev)
{
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

/* What one scrape yields, before it is committed. */
struct scrape {
	bool has_h[3];
	struct prom_buckets h[3];
	bool has[M_N];
	double val[M_N];
	bool has_slice[3][HAL_MAX_SLICES];
	double slice[3][HAL_MAX_SLICES];
	bool has_q[2][HAL_MAX_SLICES];
	double qv[2][HAL_MAX_SLICES];
};

/* Tries each '|' alternative; 0 and the name used, or the last error. */
static int get_hist(const struct prom_doc *doc, const char *names, const struct prom_matcher *m,
		    struct prom_buckets *out)
{
	int rc = -ENOENT;
	char buf[256];
	const char *p = names;
	while (*p) {
		const char *e = strchr(p, '|');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			rc = prom_histogram_get(doc, buf, m, out);
			if (rc != -ENOENT)
				return rc;
		}
		p += n + (e ? 1 : 0);
	}
	return rc;
}

static int get_value(const struct prom_doc *doc, const char *names, const struct prom_matcher *m,
		     const char *ln, const char *lv, double *out)
{
	int rc = -ENOENT;
	char buf[256];
	const char *p = names;
	while (*p) {
		const char *e = strchr(p, '|');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			rc = prom_value_sum(doc, buf, m, ln, lv, out);
			if (rc != -ENOENT)
				return rc;
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

static uint32_t extract(struct sv *s, const struct prom_doc *doc, struct scrape *sc)
{
	char ms[160];
	for (int i = 0; i < 3; i++) {
		const char *n = s->mname[M_TTFT + i];
		if (!n)
			continue;
		int rc = get_hist(doc, n, &s->match, &sc->h[i]);
		sc->has_h[i] = rc == 0;
		if (rc == -EBADMSG || rc == -E2BIG) {
			snprintf(s->fault_msg, sizeof(s->fault_msg),
				 "%s: histogram %s malformed (no +Inf bucket, differing bounds or over %d buckets)",
				 s->url, n, PROM_MAX_BUCKETS);
			return HAL_SVF_PARSE;
		}
		if (rc && s->required[M_TTFT + i]) {
			matcher_str(&s->match, ms, sizeof(ms));
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: histogram %s has no series matching %s",
				 s->url, n, ms);
			return HAL_SVF_MISSING;
		}
	}
	static const int scalar[] = { M_REQ, M_TOK, M_RUN, M_WAIT, M_DUR, M_INT8_TOK, M_CONFIRM };
	for (size_t k = 0; k < sizeof(scalar) / sizeof(scalar[0]); k++) {
		int m = scalar[k];
		if (!s->mname[m])
			continue;
		sc->has[m] = get_value(doc, s->mname[m], &s->match, NULL, NULL, &sc->val[m]) == 0;
		if (!sc->has[m] && s->required[m]) {
			matcher_str(&s->match, ms, sizeof(ms));
			snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: metric %s has no series matching %s",
				 s->url, s->mname[m], ms);
			return HAL_SVF_MISSING;
		}
	}
	for (size_t sl = 0; sl < s->n_slices; sl++) {
		for (int j = 0; j < 3; j++) {
			const char *n = s->mname[M_SLICE_REQ + j];
			if (n)
				sc->has_slice[j][sl] = get_value(doc, n, &s->match, s->slice_label,
								 s->slice_name[sl], &sc->slice[j][sl]) == 0;
		}
		for (int j = 0; j < 2; j++) {
			const char *n = s->mname[M_Q_SAMPLES + j];
			if (n)
				sc->has_q[j][sl] = get_value(doc, n, &s->match, s->slice_label,
							     s->slice_name[sl], &sc->qv[j][sl]) == 0;
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
 * server runs or queues ten million requests at once, and no latency
 * bucket bound beyond a day measures a request. */
#define SV_COUNTER_MAX 9007199254740992.0
#define SV_GAUGE_MAX 1e7
#define SV_LATENCY_MAX_MS 86400e3

static bool bad_count(double v, double max)
{
	return !isfinite(v) || v < 0 || v > max;
}

/* The one judgement of a scrape's values before anything of it counts:
 * true (and fault_msg naming the metric and value) when one is implausible. */
static bool scrape_implausible(struct sv *s, const struct scrape *sc)
{
	const char *what = NULL, *name = NULL;
	double v = 0;
	for (int i = 0; i < 3 && !what; i++) {
		const struct prom_buckets *b = &sc->h[i];
		if (!sc->has_h[i])
			continue;
		name = s->mname[M_TTFT + i];
		for (size_t k = 0; k < b->n && !what; k++) {
			if (k + 1 < b->n && !(b->le[k] * s->hist_unit_ms <= SV_LATENCY_MAX_MS) &&
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
	static const int counters[] = { M_REQ, M_TOK, M_DUR, M_INT8_TOK };
	for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]) && !what; k++)
		if (sc->has[counters[k]] && bad_count(v = sc->val[counters[k]], SV_COUNTER_MAX)) {
			what = "counter";
			name = s->mname[counters[k]];
		}
	static const int gauges[] = { M_RUN, M_WAIT };
	for (size_t k = 0; k < 2 && !what; k++)
		if (sc->has[gauges[k]] && bad_count(v = sc->val[gauges[k]], SV_GAUGE_MAX)) {
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
		 s->url, what, name ? name : "?", v);
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

static uint32_t commit(struct sv *s, const struct scrape *sc)
{
	uint32_t faults = 0;
	struct prom_buckets iv;
	for (int i = 0; i < 3; i++) {
		if (!sc->has_h[i])
			continue;
		if (buckets_interval(&s->last[i], &sc->h[i], &iv))
			faults |= HAL_SVF_RESET;
		prom_buckets_to_hist(s->h[i], &iv, s->hist_unit_ms);
	}
	/* Triton: counters of microseconds over the request counter; each
	 * request of the interval enters the e2e histogram at the interval mean */
	if (sc->has[M_DUR] && sc->has[M_REQ] && !sc->has_h[2]) {
		struct prom_buckets b = { .n = 1, .le = { INFINITY }, .cum = { sc->val[M_REQ] },
					  .count = sc->val[M_REQ], .sum = sc->val[M_DUR] };
		if (buckets_interval(&s->last_dur, &b, &iv))
			faults |= HAL_SVF_RESET;
		if (iv.count >= 1 && iv.count < 1e15 && iv.sum >= 0)
			hist_add(s->h[2], iv.sum / iv.count * s->counter_unit_ms, (uint64_t)llround(iv.count));
	}
	if (sc->has[M_REQ] && prom_counter_update(&s->c_req, sc->val[M_REQ]))
		faults |= HAL_SVF_RESET;
	if (sc->has[M_TOK] && prom_counter_update(&s->c_tok, sc->val[M_TOK]))
		faults |= HAL_SVF_RESET;
	if (sc->has[M_INT8_TOK] && prom_counter_update(&s->c_int8_tok, sc->val[M_INT8_TOK]))
		faults |= HAL_SVF_RESET;
	s->running = sc->has[M_RUN] && sc->val[M_RUN] > 0 ? counter_u64(sc->val[M_RUN]) : 0;
	s->queue_len = sc->has[M_WAIT] && sc->val[M_WAIT] > 0 ? counter_u64(sc->val[M_WAIT]) : 0;
	for (size_t sl = 0; sl < s->n_slices; sl++) {
		for (int j = 0; j < 3; j++)
			if (sc->has_slice[j][sl] && prom_counter_update(&s->c_slice[j][sl], sc->slice[j][sl]))
				faults |= HAL_SVF_RESET;
		bool reset = false, ok = true;
		if (sc->has_q[0][sl])
			ok &= quality_counter_update(s, &s->c_qs[sl], sc->qv[0][sl], &reset);
		if (sc->has_q[1][sl])
			ok &= quality_counter_update(s, &s->c_qm[sl], sc->qv[1][sl], &reset);
		if (reset)
			faults |= HAL_SVF_RESET;
		if (!ok) {
			faults |= HAL_SVF_IMPLAUSIBLE;
			s->q_scrape_implausible = true;
			snprintf(s->fault_msg, sizeof(s->fault_msg),
				 "%s: slice %s: quality counters rose by more than quality_max_samples "
				 "(%llu) in one read: not counted", s->url, s->slice_name[sl],
				 (unsigned long long)s->q_max_samples);
		}
	}
	if (sc->has[M_CONFIRM] && sc->val[M_CONFIRM] >= 0 && sc->val[M_CONFIRM] < 9e18)
		s->gen_applied = (uint64_t)sc->val[M_CONFIRM];
	return faults;
}

/* One scrape; returns the fault bits (0: good, state committed). */
static uint32_t scrape(struct sv *s, uint64_t deadline_ms)
{
	s->fault_msg[0] = '\0';
	s->have_scrape = true;
	s->scraped_since_quality = true;
	s->last_ok = false;
	uint32_t f = http_get(s, s->url, deadline_ms);
	if (f)
		return f;
	struct prom_doc doc;
	struct prom_error perr;
	int rc = prom_parse(s->body, s->body_len, &doc, &perr);
	if (rc) {
		snprintf(s->fault_msg, sizeof(s->fault_msg), "%s: %s", s->url,
			 rc == -ENOMEM ? "out of memory" : perr.msg);
		return HAL_SVF_PARSE;
	}
	struct scrape *sc = calloc(1, sizeof(*sc));
	if (!sc) {
		prom_doc_free(&doc);
		snprintf(s->fault_msg, sizeof(s->fault_msg), "out of memory");
		return HAL_SVF_PARSE;
	}
	f = extract(s, &doc, sc);
	prom_doc_free(&doc);
	if (!f && scrape_implausible(s, sc))
		f = HAL_SVF_IMPLAUSIBLE;
	if (!f) {
		f = commit(s, sc);
		s->last_ok = true;
	}
	free(sc);
	return f;
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
	memset(out, 0, sizeof(*out));
	/* scrape and confirmation GET share one timeout_ms: the read fits the period */
	uint64_t deadline = govd_mono_ms() + s->timeout_ms;
	uint32_t f = scrape(s, deadline);
	uint64_t now = govd_clock_now_or_mono_ms(s->clock);
	out->t_ms = now;
	out->valid = s->last_ok;
	out->faults = f;
	out->requests_completed = counter_u64(s->c_req.total);
	out->tokens_generated = counter_u64(s->c_tok.total);
	out->tokens_int8 = counter_u64(s->c_int8_tok.total);
	out->queue_len = s->queue_len;
	out->running = s->running;
	out->ttft = s->h[0];
	out->tbt = s->h[1];
	out->e2e = s->h[2];
	out->n_slices = s->n_slices;
	for (size_t i = 0; i < s->n_slices; i++) {
		memcpy(out->slice_name[i], s->slice_name[i], HAL_NAME_LEN);
		out->slice_completed[i] = counter_u64(s->c_slice[0][i].total);
		out->slice_int8_completed[i] = counter_u64(s->c_slice[1][i].total);
		out->slice_tokens_int8[i] = counter_u64(s->c_slice[2][i].total);
	}
	char cmsg[300] = "";
	uint32_t cf = s->hap ? hap_tick(s, cmsg, sizeof(cmsg))
			     : confirm_check(s, now, deadline, cmsg, sizeof(cmsg));
	if (cf) {
		out->faults |= cf;
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
		out->samples[i] = sat_add_u64(counter_u64(s->c_qs[i].total), s->qs_sock[i]);
		out->mismatches[i] = sat_add_u64(counter_u64(s->c_qm[i].total), s->qm_sock[i]);
		out->delta[i] = s->qdelta[i];
		if (!isnan(s->qdelta[i]))
			out->delta_valid |= 1u << i;
	}
	for (size_t i = s->n_slices; i < HAL_MAX_SLICES; i++)
		out->delta[i] = NAN;
	out->malformed = s->malformed;
	out->faults = f;
	out->fault_msg = s->qfault_msg[0] ? s->qfault_msg : NULL;
	return 0;
}

/* ---- precision ---- */

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
	const char *names[HAL_MAX_SLICES];
	for (size_t i = 0; i < n_slices; i++)
		names[i] = s->slice_name[i];
	int rc = pact_apply(&s->act, names, int8_frac, n_slices, wall_ms());
	s->gen_set = s->act.generation;
	s->t_set_ms = govd_clock_now_or_mono_ms(s->clock);
	if (rc)
		snprintf(s->fault_msg, sizeof(s->fault_msg), "%s", s->act.err);
	return rc;
}

#define SV_OPS(prec, qual)                     \
	{                                      \
		.name = "serving",             \
		.open = sv_open,               \
		.close = sv_close,             \
		.get_limits = sv_get_limits,   \
		.sample = sv_sample,           \
		.read_serving = sv_read_serving, \
		.read_quality = qual,          \
		.set_precision = prec,         \
	}

const struct hal_ops hal_serving_ops = SV_OPS(sv_set_precision, sv_read_quality);
/* Capabilities follow the options: without an actuator or a quality source
 * the device offers no set_precision / read_quality (hal_can_*() false). */
static const struct hal_ops sv_ops_variant[2][2] = {
	{ SV_OPS(NULL, NULL), SV_OPS(NULL, sv_read_quality) },
	{ SV_OPS(sv_set_precision, NULL), SV_OPS(sv_set_precision, sv_read_quality) },
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

/* The server's document first; the plant's share only if the server took it. */
static int pw_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_set_precision(dev, int8_frac, n_slices);
	if (!rc && s->fwd_precision)
		s->inner.ops->set_precision(&s->inner, int8_frac, n_slices);
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
	if (s->hap && !io->get_original && !io->adopt_original) {
		/* a power side without its own record (the sim): the router's */
		w->ops.get_original = hap_get_original;
		w->ops.adopt_original = hap_adopt;
	}
	dev->ops = &w->ops;
}
