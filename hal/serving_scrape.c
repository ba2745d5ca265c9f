/* The serving backend's scrape (hal/hal_serving.c has its options): one
 * bounded GET per replica, the families read by name, and everything a
 * scrape yields committed only when the whole scrape is good. */
#include "hal/hal_serving.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/curl_util.h"
#include "hal/serving_internal.h"

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

/* The next name of an "a|b" list into buf, moving *p past it and counting
 * it in *k; false at the end. A name too long for buf is passed over (and
 * counted, so an index still names its alternative). */
static bool next_alt(const char **p, size_t *k, char *buf, size_t len)
{
	while (**p) {
		const char *e = strchr(*p, '|');
		size_t n = e ? (size_t)(e - *p) : strlen(*p);
		const char *name = *p;
		*p += n + (e ? 1 : 0);
		(*k)++;
		if (n < len) {
			memcpy(buf, name, n);
			buf[n] = '\0';
			return true;
		}
	}
	return false;
}

/* Tries each '|' alternative; 0 and the index of the name used in *alt,
 * or the last error. */
static int get_hist(const struct prom_doc *doc, const char *names, const struct prom_matcher *m,
		    struct prom_buckets *out, size_t *alt)
{
	int rc = -ENOENT;
	char buf[256];
	const char *p = names;
	for (size_t k = 0; next_alt(&p, &k, buf, sizeof(buf));) {
		rc = prom_histogram_get(doc, buf, m, out);
		if (rc != -ENOENT) {
			*alt = k - 1 < SV_MAX_ALT ? k - 1 : SV_MAX_ALT - 1;
			return rc;
		}
	}
	return rc;
}

static int get_value(const struct prom_doc *doc, const char *names, const struct prom_matcher *m,
		     const char *ln, const char *lv, enum agg agg, double *out, size_t *alt)
{
	int rc = -ENOENT;
	char buf[256];
	const char *p = names;
	for (size_t k = 0; next_alt(&p, &k, buf, sizeof(buf));) {
		rc = agg == AGG_MAX ? prom_value_max(doc, buf, m, out)
				    : prom_value_sum(doc, buf, m, ln, lv, out);
		if (rc != -ENOENT) {
			if (alt)
				*alt = k - 1 < SV_MAX_ALT ? k - 1 : SV_MAX_ALT - 1;
			return rc;
		}
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

uint32_t sv_scrape(struct sv *s, uint64_t deadline_ms)
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
uint64_t sv_rep_total(const struct sv *s, size_t off)
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
	out->requests_completed = sv_rep_total(s, offsetof(struct replica, c_req));
	out->tokens_generated = sv_rep_total(s, offsetof(struct replica, c_tok));
	out->tokens_int8 = sv_rep_total(s, offsetof(struct replica, c_int8_tok));
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
		out->slice_completed[i] = sv_rep_total(s, slice_off(0, i));
		out->slice_int8_completed[i] = sv_rep_total(s, slice_off(1, i));
		out->slice_tokens_int8[i] = sv_rep_total(s, slice_off(2, i));
	}
	out->precision_gen_set = s->gen_set;
	out->precision_gen_applied = s->gen_applied;
	out->fault_msg = s->fault_msg[0] ? s->fault_msg : NULL;
}

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

int sv_read_serving(struct hal_dev *dev, struct hal_serving *out)
{
	struct sv *s = dev->priv;
	if (!s || !out)
		return -EINVAL;
	/* scrape and confirmation GET share one timeout_ms: the read fits the period */
	uint64_t deadline = govd_mono_ms() + s->timeout_ms;
	uint32_t f = sv_scrape(s, deadline);
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

