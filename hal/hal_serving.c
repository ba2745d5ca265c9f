/* The `serving` backend. One scrape per read_serving, bounded (with the
 * confirmation GET) by timeout_ms so it fits the control period; everything a scrape yields is committed
 * only when the whole scrape is good, so a failed one never leaves half
 * fresh state behind. */
#include "hal/backend_opts.h"
#include "hal/hal_serving.h"
#include "hal/serving_internal.h"

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

static const char *const fmt_name[FMT_N] = { "vllm", "sglang", "triton", "generic" };

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
	"haproxy_max_step", "haproxy_budget_ms", "haproxy_low_mode", NULL,
};

#define POWER_PREFIX "power."


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

static void sv_pick_ops(struct hal_dev *dev, struct sv *s);

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
	/* What the low replica serves: INT8 (before the ladder) or FP8. */
	int lm = HAL_LOW_INT8;
	bad |= bopts_enum(o, "haproxy_low_mode", hal_low_mode_names, HAL_LOW_INT8, &lm) != 0;
	s->hap_low_mode = (uint8_t)lm;
	if (!haproxy) {
		static const char *const hk[] = { "haproxy_backends", "haproxy_server_full",
						  "haproxy_server_low", "haproxy_total_weight",
						  "haproxy_max_step", "haproxy_budget_ms",
						  "haproxy_low_mode" };
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
	if ((v = bopts_str(o, "quality_socket", NULL)) && (rc = sv_quality_socket_open(s, cfg, v, diags)))
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

/* ---- precision ---- */

static int sv_write_doc(struct sv *s, const double *int8_frac, const double *shadow);

/* What every per-slice write checks first: a device, values for the
 * slices it was opened with, and an actuator. 0, -EINVAL or -ENOTSUP. */
static int sv_slice_write_check(const struct sv *s, const void *v, size_t n_slices)
{
	if (!s || (!v && n_slices))
		return -EINVAL;
	if (!s->act_on)
		return -ENOTSUP;
	return n_slices == s->n_slices ? 0 : -EINVAL;
}

int sv_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_slice_write_check(s, int8_frac, n_slices);
	if (rc)
		return rc;
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
	int rc = pact_apply(&s->act, names, int8_frac, s->mode_sent, shadow, s->n_slices, wall_ms());
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

/* The rung per slice, carried by the document (low_mode) with the shares in
 * force: the governor writes it before the shares. The HAProxy router's low
 * replica is one precision (haproxy_low_mode): only that rung, nothing sent. */
int sv_set_low_mode(struct hal_dev *dev, const uint8_t *mode, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_slice_write_check(s, mode, n_slices);
	if (rc)
		return rc;
	for (size_t i = 0; i < n_slices; i++)
		if (mode[i] >= HAL_LOW_N)
			return -EINVAL;
	if (s->hap) {
		for (size_t i = 0; i < n_slices; i++)
			if (mode[i] != s->hap_low_mode) {
				snprintf(s->fault_msg, sizeof(s->fault_msg),
					 "haproxy: slice %s asks for %s; the low replica serves %s",
					 s->slice_name[i], hal_low_mode_names[mode[i]],
					 hal_low_mode_names[s->hap_low_mode]);
				return -ENOTSUP;
			}
		return 0;
	}
	uint8_t was[HAL_MAX_SLICES];
	memcpy(was, s->mode_sent, sizeof(was));
	memcpy(s->mode_sent, mode, n_slices);
	rc = sv_write_doc(s, s->int8_sent, s->shadow_sent);
	if (rc)
		memcpy(s->mode_sent, was, sizeof(was)); /* what the server has */
	return rc;
}

int sv_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_slice_write_check(s, rate, n_slices);
	if (rc)
		return rc;
	if (s->hap)
		return -ENOTSUP; /* HAProxy's weights carry no shadow rate */
	for (size_t i = 0; i < n_slices; i++)
		if (!(rate[i] >= 0.0 && rate[i] <= 1.0))
			return -EINVAL;
	return sv_write_doc(s, s->int8_sent, rate);
}

/* The server as govd may assume it ran before it: BF16 on every slice
 * through a file/http/exec actuator (it cannot read the server's own
 * setting back), the router's original weights with HAProxy. */
int sv_restore(struct hal_dev *dev)
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
	uint8_t was[HAL_MAX_SLICES];
	memcpy(was, s->mode_sent, sizeof(was));
	memset(s->mode_sent, 0, sizeof(s->mode_sent)); /* no rung: BF16 everywhere */
	int rc = sv_write_doc(s, zero, zero);
	if (rc)
		memcpy(s->mode_sent, was, sizeof(was));
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

#define SV_OPS(prec, low, shadow, qual)        \
	{                                      \
		.name = "serving",             \
		.set_low_mode = low,           \
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

const struct hal_ops hal_serving_ops =
	SV_OPS(sv_set_precision, sv_set_low_mode, sv_set_shadow_rate, sv_read_quality);
/* Capabilities follow the options: without an actuator or a quality source
 * the device offers no set_precision / read_quality (hal_can_*() false);
 * the HAProxy router no set_low_mode (its low replica is one precision). */
static const struct hal_ops sv_ops_variant[3][2] = {
	{ SV_OPS(NULL, NULL, NULL, NULL), SV_OPS(NULL, NULL, NULL, sv_read_quality) },
	{ SV_OPS(sv_set_precision, sv_set_low_mode, sv_set_shadow_rate, NULL),
	  SV_OPS(sv_set_precision, sv_set_low_mode, sv_set_shadow_rate, sv_read_quality) },
	{ SV_OPS(sv_set_precision, NULL, sv_set_shadow_rate, NULL),
	  SV_OPS(sv_set_precision, NULL, sv_set_shadow_rate, sv_read_quality) },
};

static void sv_pick_ops(struct hal_dev *dev, struct sv *s)
{
	bool q = s->qfd >= 0 || sv_quality_from_scrape(s);
	/* A router whose low replica is FP8 takes the FP8 rung (and only it). */
	dev->ops = &sv_ops_variant[!s->act_on ? 0 : s->hap && s->hap_low_mode != HAL_LOW_FP8 ? 2 : 1][q];
	sv_power_ops(dev, s); /* the power side's or the router's record, where either is */
}
