/* govctl report: reading a run (summary.json + decisions.jsonl of govctl sim,
 * or a live govd's decisions.jsonl alone) into per-period and per-window
 * evidence. Figures a live log lacks are recomputed from it (docs/report.md). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsafe.h"
#include "governor/controllers/controller.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "report/report.h"

/* A decision log is MiBs; rotated files stay under max_bytes. */
#define RP_LOG_MAX_BYTES (2048ul * 1024 * 1024)

static int fail(char *err, size_t len, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

static double jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static double jnum2(json_t *o, const char *a, const char *b)
{
	return jnum(json_object_get(o, a), b);
}

/* Copies src into out, cut (when it must be) at a character boundary: a
 * string cut inside a UTF-8 sequence is one jansson refuses (json_string
 * returns NULL), and the field would vanish from report.json. */
static void copy_utf8(char *out, size_t len, const char *src)
{
	size_t n = strlen(src);
	if (n >= len) {
		n = len - 1;
		while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(out, src, n);
	out[n] = '\0';
}

static void jstr(json_t *o, const char *k, char *out, size_t len)
{
	json_t *v = json_object_get(o, k);
	copy_utf8(out, len, json_is_string(v) ? json_string_value(v) : "");
}

static uint32_t reason_bits(json_t *arr)
{
	uint32_t bits = 0;
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		const char *s = json_string_value(v);
		for (int b = 0; s && b < GOV_R_COUNT; b++) {
			const char *n = gov_reason_name(1u << b);
			if (n && !strcmp(n, s))
				bits |= 1u << b;
		}
	}
	return bits;
}

static void read_int8(json_t *op, double *out, size_t n)
{
	json_t *a = json_object_get(op, "int8_frac");
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(a, i);
		out[i] = json_is_number(v) ? json_number_value(v) : NAN;
	}
}

/* scenario_path and command, when the run recorded them (header or
 * summary.json; absent in older runs and in govd's logs). */
static void read_run_meta(struct rp_run *r, json_t *o)
{
	json_t *sp = json_object_get(o, "scenario_path"), *cmd = json_object_get(o, "command");
	if (json_is_string(sp) && json_string_length(sp)) {
		copy_utf8(r->scenario_path, sizeof(r->scenario_path), json_string_value(sp));
		r->scenario_path_recorded = true;
	}
	if (json_is_string(cmd))
		copy_utf8(r->command, sizeof(r->command), json_string_value(cmd));
}

/* A JSON number as an integer type: malformed logs must not reach an
 * out-of-range float conversion (undefined behaviour). */
static uint64_t jcount(json_t *o, const char *k, uint64_t max)
{
	double v = jnum(o, k);
	if (!(v >= 0))
		return 0;
	return v >= (double)max ? max : (uint64_t)v;
}

/* What a header must carry for the windows and slices to mean anything. */
static const char *header_error(json_t *h)
{
	double ms = jnum(h, "period_ms");
	if (!(ms >= 1 && ms <= 3600e3))
		return "header period_ms missing or outside 1 ms .. 1 h";
	json_t *sl = json_object_get(h, "slices");
	if (sl && !json_is_array(sl))
		return "header slices is not an array";
	if (json_array_size(sl) > HAL_MAX_SLICES)
		return "header names more slices than HAL_MAX_SLICES";
	size_t i;
	json_t *v;
	json_array_foreach(sl, i, v)
	{
		if (!json_is_string(v) || !json_string_length(v) ||
		    json_string_length(v) >= HAL_NAME_LEN)
			return "header slice name not a string of 1 .. HAL_NAME_LEN-1 bytes";
		for (size_t j = 0; j < i; j++)
			if (json_equal(v, json_array_get(sl, j)))
				return "header names a slice twice";
	}
	return NULL;
}

static void read_header(struct rp_run *r, json_t *h)
{
	jstr(h, "govd_version", r->govd_version, sizeof(r->govd_version));
	jstr(h, "scenario", r->scenario, sizeof(r->scenario));
	if (!r->scenario[0])
		snprintf(r->scenario, sizeof(r->scenario), "live");
	jstr(h, "policy", r->policy, sizeof(r->policy));
	jstr(h, "policy_path", r->policy_path, sizeof(r->policy_path));
	jstr(h, "policy_hash", r->policy_hash, sizeof(r->policy_hash));
	jstr(h, "controller", r->controller, sizeof(r->controller));
	read_run_meta(r, h);
	jstr(json_object_get(h, "versions"), "compiler", r->build_compiler, sizeof(r->build_compiler));
	r->period_s = jnum(h, "period_ms") / 1000.0;
	r->dry_run = json_is_true(json_object_get(h, "dry_run"));
	r->seed = jcount(h, "seed", UINT64_MAX);
	json_t *d = json_object_get(h, "device");
	jstr(d, "name", r->dev_name, sizeof(r->dev_name));
	jstr(d, "model", r->dev_model, sizeof(r->dev_model));
	jstr(d, "driver_version", r->driver, sizeof(r->driver));
	jstr(d, "firmware_version", r->firmware, sizeof(r->firmware));
	r->slowdown_c = jnum(d, "slowdown_mc") / 1000.0;
	r->shutdown_c = jnum(d, "shutdown_mc") / 1000.0;
	json_t *sl = json_object_get(h, "slices");
	size_t i;
	json_t *v;
	json_array_foreach(sl, i, v)
	{
		if (r->n_slices == HAL_MAX_SLICES)
			break;
		struct rp_slice *s = &r->slices[r->n_slices++];
		snprintf(s->name, sizeof(s->name), "%s", json_is_string(v) ? json_string_value(v) : "?");
		s->max_drop = s->int8_req_frac = s->int8_tokens_share = s->breaches = s->true_drop_end = NAN;
		s->max_drop_upper_int8 = NAN;
	}
}

static void read_decision(struct rp_run *r, json_t *d, struct rp_period *p)
{
	json_t *in = json_object_get(d, "inputs");
	p->t_s = jnum(d, "t_ms") / 1000.0;
	p->clk_mhz = jnum(in, "clk_mhz");
	p->power_limit_w = jnum(in, "power_limit_w");
	p->p_accel_w = jnum2(in, "power_w", "accel");
	p->p_mem_w = jnum2(in, "power_w", "memory");
	p->p_host_w = jnum2(in, "power_w", "host");
	p->tj_c = jnum2(in, "temp_c", "junction");
	p->tmem_c = jnum2(in, "temp_c", "memory");
	p->tin_c = jnum2(in, "temp_c", "inlet");
	p->util = jnum(in, "util");
	p->tokens_per_s = jnum(in, "tokens_per_s");
	p->int8_share = jnum(in, "int8_token_share");
	json_t *sla = json_object_get(in, "sla");
	p->win_s = jnum(sla, "window_s");
	p->win_requests = jnum(sla, "requests");
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		p->q_ms[i] = jnum(sla, sla_rows[i].key);
	p->queue_len = jnum(in, "queue_len");
	p->running = jnum(in, "running");
	p->throttle = (uint32_t)jcount(in, "throttle", UINT32_MAX);
	p->reasons = reason_bits(json_object_get(d, "reasons"));
	p->n_faults = json_array_size(json_object_get(d, "faults"));
	json_t *after = json_object_get(d, "after");
	p->clk_locked = json_is_true(json_object_get(after, "clk_locked"));
	read_int8(json_object_get(d, "before"), p->int8_before, r->n_slices);
	read_int8(after, p->int8_after, r->n_slices);
	json_t *q = json_object_get(in, "quality");
	for (size_t i = 0; i < r->n_slices; i++) {
		json_t *qs = json_array_get(q, i);
		p->q_drop_upper[i] = jnum(qs, "drop_upper");
		p->q_samples[i] = jnum(qs, "samples");
		if (json_is_true(json_object_get(qs, "gate_open")))
			p->gate_open |= 1u << i;
	}
}

/* Appends n periods, each a copy of the one before one period later (a
 * compact log's "unchanged"); with no period yet, zeroed ones. */
static int hold_periods(struct rp_run *r, size_t *pcap, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		if (r->np == *pcap) {
			size_t nc = *pcap ? 2 * *pcap : 4096;
			struct rp_period *np = realloc(r->p, nc * sizeof(*np));
			if (!np)
				return -ENOMEM;
			r->p = np;
			*pcap = nc;
		}
		struct rp_period *p = &r->p[r->np++];
		if (r->np < 2) {
			memset(p, 0, sizeof(*p));
			continue;
		}
		*p = r->p[r->np - 2];
		p->t_s += r->period_s;
	}
	return 0;
}

/* A compact log's header names its heartbeat: the periods one gap may hold
 * (a record is due every heartbeat). 0: a full log, nothing is filled. */
static uint64_t compact_max_gap(json_t *h)
{
	const char *mode = json_string_value(json_object_get(h, "log_mode"));
	double hb = jnum(h, "heartbeat_ms"), per = jnum(h, "period_ms");
	if (!mode || strcmp(mode, "compact") || !(hb >= 1 && hb <= 3600e3) || !(per >= 1))
		return 0;
	return (uint64_t)ceil(hb / per);
}

static int read_log(struct rp_run *r, const char *path, char *err, size_t errlen)
{
	struct fsafe_err fe;
	FILE *f = fsafe_fopen_read(path, RP_LOG_MAX_BYTES, &fe);
	if (!f)
		return fail(err, errlen, -errno, "%s: %s", path, fe.msg);
	char *line = NULL;
	size_t cap = 0, lineno = 0, pcap = 0;
	long len;
	int rc = 0;
	bool header = false;
	uint64_t compact_gap = 0; /* compact log: the most periods a heartbeat may skip */
	double prev_seq = -1;
	while ((len = fsafe_getline(f, &line, &cap, FSAFE_MAX_LINE)) > 0 || len == -E2BIG) {
		lineno++;
		if (len == -E2BIG) {
			rc = fail(err, errlen, -EFBIG, "%s:%zu:1: error: line longer than %u bytes",
				  path, lineno, FSAFE_MAX_LINE);
			goto out_close;
		}
		/* A last line without its newline is a write torn by a crash
		 * (kill -9): the log is valid up to its last complete line. */
		if (line[len - 1] != '\n' && feof(f))
			break;
		json_error_t je;
		json_t *o = json_loadb(line, (size_t)len, 0, &je);
		if (!o) {
			rc = fail(err, errlen, -EINVAL, "%s:%zu:%d: error: %s", path, lineno,
				  je.column > 0 ? je.column : 1, je.text);
			goto out_close;
		}
		const char *type = json_string_value(json_object_get(o, "type"));
		const char *bad = NULL;
		if (type && !strcmp(type, "header")) {
			/* A second header would add its slices to the first's. */
			bad = header ? "a second header (two logs concatenated?)" : header_error(o);
		} else if (type && !strcmp(type, "decision")) {
			bad = !header ? "decision before the header"
			      : !json_is_number(json_object_get(o, "t_ms")) ? "decision without a numeric t_ms"
			      : !json_is_object(json_object_get(o, "inputs")) ? "decision without inputs"
									       : NULL;
		}
		if (bad) {
			json_decref(o);
			rc = fail(err, errlen, -EINVAL, "%s:%zu:1: error: %s", path, lineno, bad);
			goto out_close;
		}
		if (type && !strcmp(type, "header")) {
			read_header(r, o);
			header = true;
			r->header_line = lineno;
			compact_gap = compact_max_gap(o);
		} else if (type && !strcmp(type, "restore") && compact_gap && r->np &&
			   jnum(o, "seq") > prev_seq) {
			/* A compact log's restore record carries the last period's
			 * seq: the periods after the last decision record come back
			 * as copies of it. */
			uint64_t gap = (uint64_t)(jnum(o, "seq") - prev_seq);
			if (gap > compact_gap) {
				json_decref(o);
				rc = fail(err, errlen, -EINVAL,
					  "%s:%zu:1: error: seq jumps over %llu periods, more than the "
					  "header's heartbeat_ms allows (%llu)", path, lineno,
					  (unsigned long long)gap, (unsigned long long)compact_gap);
				goto out_close;
			}
			if ((rc = hold_periods(r, &pcap, gap))) {
				json_decref(o);
				rc = fail(err, errlen, rc, "%s: out of memory", path);
				goto out_close;
			}
			prev_seq = jnum(o, "seq");
		} else if (type && !strcmp(type, "decision")) {
			/* A compact log leaves out the periods whose decision equals
			 * the one before (docs/decision-log.md): they come back as
			 * copies of it, one per missing seq. */
			double seq = jnum(o, "seq");
			uint64_t gap = 0;
			if (compact_gap && r->np && seq > prev_seq + 1)
				gap = (uint64_t)(seq - prev_seq - 1);
			if (gap > compact_gap) {
				json_decref(o);
				rc = fail(err, errlen, -EINVAL,
					  "%s:%zu:1: error: seq jumps over %llu periods, more than the "
					  "header's heartbeat_ms allows (%llu)", path, lineno,
					  (unsigned long long)gap, (unsigned long long)compact_gap);
				goto out_close;
			}
			if ((rc = hold_periods(r, &pcap, gap + 1))) {
				json_decref(o);
				rc = fail(err, errlen, rc, "%s: out of memory", path);
				goto out_close;
			}
			r->np--; /* the last slot is this record's */
			struct rp_period *p = &r->p[r->np++];
			memset(p, 0, sizeof(*p));
			read_decision(r, o, p);
			if (isfinite(seq))
				prev_seq = seq;
		}
		json_decref(o);
	}
	if (!header)
		rc = fail(err, errlen, -EINVAL, "%s:1:1: error: no header record (not a decision log?)", path);
	else if (!r->np)
		rc = fail(err, errlen, -EINVAL, "%s:%zu:1: error: a header but no decision records", path,
			  r->header_line);
out_close:
	free(line);
	fclose(f);
	return rc;
}

/* The figures the verdict rests on: a summary without them must not pass
 * as a run that had no clamps and no breaches. NULL when complete. */
static const char *summary_error(const struct rp_run *r, json_t *s, char *why, size_t len)
{
	static const char *const need[][2] = {
		{ "tokens_generated", NULL },   { "tokens_per_joule", NULL },
		{ "energy_j", "total" },        { "sla", "attainment" },
		{ "thermal", "clamp_events" },  { "quality", "breach_requests" },
	};
	if (!json_is_object(s))
		return "not a JSON object (a govctl sim summary.json)";
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		json_t *v = json_object_get(s, need[i][0]);
		if (need[i][1])
			v = json_object_get(v, need[i][1]);
		if (!json_is_number(v)) {
			snprintf(why, len, "%s%s%s missing or not a number", need[i][0],
				 need[i][1] ? "." : "", need[i][1] ? need[i][1] : "");
			return why;
		}
	}
	json_t *qs = json_object_get(json_object_get(s, "quality"), "per_slice");
	for (size_t i = 0; i < r->n_slices; i++)
		if (!json_is_object(json_object_get(qs, r->slices[i].name))) {
			snprintf(why, len,
				 "slice '%.48s' of the decision log's header is not in quality.per_slice "
				 "(summary and log of different runs?)",
				 r->slices[i].name);
			return why;
		}
	return NULL;
}

static void read_summary(struct rp_run *r, json_t *s)
{
	r->have_summary = true;
	read_run_meta(r, s);
	if (!r->build_compiler[0])
		jstr(s, "compiler", r->build_compiler, sizeof(r->build_compiler));
	r->duration_s = jnum(s, "duration_s");
	r->tokens = jnum(s, "tokens_generated");
	r->e_accel = jnum2(s, "energy_j", "accel");
	r->e_mem = jnum2(s, "energy_j", "memory");
	r->e_host = jnum2(s, "energy_j", "host");
	r->e_total = jnum2(s, "energy_j", "total");
	r->tpj = jnum(s, "tokens_per_joule");
	json_t *sla = json_object_get(s, "sla");
	r->window_s = jnum(sla, "window_s");
	r->windows = jnum(sla, "windows");
	r->windows_met = jnum(sla, "windows_met");
	r->attainment = jnum(sla, "attainment");
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		r->q_ms[i] = jnum(sla, sla_rows[i].key);
	json_t *t = json_object_get(sla, "targets");
	for (size_t i = 0; i < SLA_N_ROWS; i++) {
		double v = jnum(t, sla_rows[i].key);
		r->targets[i] = isfinite(v) ? v : 0;
	}
	double floor_tps = jnum(t, "min_tokens_per_s");
	r->min_tokens_per_s = isfinite(floor_tps) ? floor_tps : 0;
	json_t *pw = json_object_get(sla, "per_window");
	if (json_is_array(pw) && json_array_size(pw)) {
		r->sw = calloc(json_array_size(pw), sizeof(*r->sw));
		size_t i;
		json_t *x;
		json_array_foreach(pw, i, x)
		{
			if (!r->sw)
				break;
			struct rp_simwin *w = &r->sw[r->nsw++];
			w->idle = json_is_true(json_object_get(x, "idle"));
			w->tail = json_is_true(json_object_get(x, "tail"));
			w->sla_met = json_is_true(json_object_get(x, "sla_met"));
			w->tokens = jnum(x, "tokens");
			for (size_t q = 0; q < SLA_N_ROWS; q++)
				w->q_ms[q] = jnum(x, sla_rows[q].key);
		}
	}
	r->attainment_goal = jnum(t, "attainment");
	r->have_policy_sla = true;
	json_t *th = json_object_get(s, "thermal");
	r->ceiling_c = jnum(th, "ceiling_c");
	r->max_tj_c = jnum(th, "max_junction_c");
	r->clamp_events = jnum(th, "clamp_events");
	r->clamp_time_s = jnum(th, "clamp_time_s");
	r->above_ceiling_s = jnum(th, "time_above_ceiling_s");
	r->int8_token_frac = jnum2(s, "precision", "int8_token_fraction");
	r->breaches = jnum2(s, "quality", "breach_requests");
	r->rollbacks = jnum(s, "rollbacks");
	r->telemetry_faults = jnum(s, "telemetry_faults");
	r->failed = json_is_true(json_object_get(s, "failed"));
	jstr(s, "fail_reason", r->fail_reason, sizeof(r->fail_reason));
	json_t *ps = json_object_get(json_object_get(s, "precision"), "per_slice");
	json_t *qs = json_object_get(json_object_get(s, "quality"), "per_slice");
	for (size_t i = 0; i < r->n_slices; i++) {
		struct rp_slice *sl = &r->slices[i];
		json_t *p = json_object_get(ps, sl->name), *q = json_object_get(qs, sl->name);
		sl->int8_req_frac = jnum(p, "int8_request_fraction");
		sl->int8_tokens_share = jnum(p, "int8_token_share_of_all");
		sl->max_drop = jnum(q, "max_drop");
		sl->true_drop_end = jnum(q, "true_drop_end");
		sl->breaches = jnum(q, "breach_requests");
	}
}

static void join_owners(const struct policy *p, char *out, size_t len)
{
	char buf[1024] = "";
	for (size_t i = 0; i < p->metadata.n_owners; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, sizeof(buf) - l, "%s%s", i ? ", " : "", p->metadata.owners[i]);
	}
	copy_utf8(out, len, buf);
}

static void read_policy(struct rp_run *r)
{
	struct policy *p = NULL;
	struct diag_list d = { 0 };
	if (!r->policy_path[0] || policy_load(r->policy_path, &p, &d)) {
		r->policy_state = 1;
		diag_clear(&d);
		return;
	}
	diag_clear(&d);
	if (strcmp(p->hash_hex, r->policy_hash)) {
		r->policy_state = 2;
		policy_free(p);
		return;
	}
	r->policy_state = 0;
	join_owners(p, r->owners, sizeof(r->owners));
	copy_utf8(r->workload_profile, sizeof(r->workload_profile), p->metadata.workload_profile);
	copy_utf8(r->model_revision, sizeof(r->model_revision), p->metadata.model_revision);
	copy_utf8(r->power_mode, sizeof(r->power_mode), p->metadata.power_mode);
	copy_utf8(r->v_compiler, sizeof(r->v_compiler), p->metadata.validated_with.compiler);
	copy_utf8(r->v_runtime, sizeof(r->v_runtime), p->metadata.validated_with.runtime);
	copy_utf8(r->v_driver, sizeof(r->v_driver), p->metadata.validated_with.driver);
	copy_utf8(r->v_firmware, sizeof(r->v_firmware), p->metadata.validated_with.firmware);
	snprintf(r->objective, sizeof(r->objective), "%s", policy_objective_names[p->objective.kind]);
	r->have_triggers = true;
	r->trig_sla_n = p->rollback.sla_violated_windows;
	r->trig_sla_m = p->rollback.sla_of_windows;
	r->trig_quality = p->rollback.quality_breach;
	r->trig_clamps = p->rollback.thermal_clamp_events;
	r->trig_faults = p->rollback.telemetry_faults;
	if (!r->have_policy_sla) {
		memcpy(r->targets, p->sla.latency_ms, sizeof(r->targets));
		r->min_tokens_per_s = p->sla.min_tokens_per_s;
		r->attainment_goal = p->sla.attainment;
		r->ceiling_c = p->thermal.ceiling_c;
		r->window_s = p->sla.window_s;
		r->have_policy_sla = true;
	}
	for (size_t i = 0; i < r->n_slices; i++)
		if (isnan(r->slices[i].max_drop))
			r->slices[i].max_drop = policy_slice_max_drop(p, r->slices[i].name);
	policy_free(p);
}

int rp_run_load(const char *path, struct rp_run *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s", path);
	char log[1200], sum[1200];
	struct stat st;
	if (stat(path, &st))
		return fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	bool is_dir = S_ISDIR(st.st_mode);
	struct fsafe_err fe;
	snprintf(log, sizeof(log), is_dir ? "%s/decisions.jsonl" : "%s", path);
	snprintf(r->log_path, sizeof(r->log_path), "%s", log);
	int rc = read_log(r, log, err, errlen);
	if (rc)
		goto undo_periods;
	r->duration_s = r->tokens = r->e_total = r->tpj = NAN;
	r->attainment_goal = r->ceiling_c = r->window_s = NAN;
	r->max_tj_c = r->clamp_events = r->breaches = NAN;
	if (is_dir) {
		snprintf(sum, sizeof(sum), "%s/summary.json", path);
		if (!stat(sum, &st)) {
			json_error_t je = { .line = 0 };
			char *text = NULL;
			size_t tl = 0;
			json_t *s = NULL;
			if (fsafe_read_all(sum, FSAFE_MAX_BYTES, 0, &text, &tl, &fe))
				snprintf(je.text, sizeof(je.text), "%.150s", fe.msg);
			else
				s = json_loadb(text, tl, 0, &je);
			free(text);
			if (!s) {
				rc = fail(err, errlen, -EINVAL, "%s:%d:%d: error: %s", sum, je.line, je.column,
					  je.text);
				goto undo_periods;
			}
			char why[200];
			const char *bad = summary_error(r, s, why, sizeof(why));
			if (bad) {
				rc = fail(err, errlen, -EINVAL, "%s: error: %s", sum, bad);
				json_decref(s);
				goto undo_periods;
			}
			read_summary(r, s);
			json_decref(s);
		}
	}
	read_policy(r);
	if (!isfinite(r->ceiling_c))
		r->ceiling_c = 83.0; /* policy default (docs/policy.md) when nothing says otherwise */
	if (!isfinite(r->window_s) || r->window_s <= 0) {
		double w = 0;
		for (size_t i = 0; i < r->np; i++)
			if (r->p[i].win_s > w)
				w = r->p[i].win_s;
		r->window_s = w > 0 ? w : 60.0;
	}
	snprintf(r->label, sizeof(r->label), "%s/%s/seed%llu", r->scenario, r->policy,
		 (unsigned long long)r->seed);
	if (!r->scenario_path_recorded) /* older runs: the layout's convention */
		snprintf(r->scenario_path, sizeof(r->scenario_path), "configs/scenarios/%s.yaml",
			 r->scenario);
	r->scenario_path_exists = !stat(r->scenario_path, &st);
	return rp_run_windows(r);

undo_periods:
	free(r->p);
	r->p = NULL;
	return rc;
}

void rp_run_free(struct rp_run *r)
{
	free(r->p);
	free(r->w);
	free(r->sw);
	r->p = NULL;
	r->w = NULL;
	r->sw = NULL;
}

/* An SLA window as the report judges it: the simulator's own judgement
 * (summary.json sla.per_window, from the window's ground-truth histograms)
 * when the run has it, else sla_judge() -- the rule every other judge uses --
 * on the quantiles, requests and throughput the log carries at the window's
 * close, busy when a period of it had requests queued or running. A tail
 * (shorter than window_s, after a full window) is not judged, as the summary
 * does not count it. The headline attainment and every plot count these. */
static void window_judge(const struct rp_run *r, size_t k, bool work, const struct rp_period *close,
			 struct rp_wstats *w)
{
	const struct rp_simwin *s = k < r->nsw ? &r->sw[k] : NULL;
	if (r->nsw) {
		w->judged_by_sim = true;
		w->tail = !s || s->tail;
		w->judged = s && !s->tail && !s->idle;
		w->sla_met = w->judged && s->sla_met;
		if (s)
			memcpy(w->q_ms, s->q_ms, sizeof(w->q_ms));
		return;
	}
	w->tail = k > 0 && k + 1 == r->nw && w->periods * (r->period_s > 0 ? r->period_s : 1) <
							 r->window_s - 1e-9;
	struct sla_window_obs o = {
		.served = w->requests > 0 ? (uint64_t)w->requests : 0,
		.waiting = close->queue_len > 0,
		.busy = work,
		.tokens_per_s = close->tokens_per_s,
	};
	memcpy(o.quantile_ms, w->q_ms, sizeof(o.quantile_ms));
	enum sla_verdict v = sla_judge(r->targets, r->min_tokens_per_s, &o, NULL);
	w->judged = !w->tail && v != SLA_IDLE;
	w->sla_met = w->judged && v == SLA_MET;
}

int rp_run_windows(struct rp_run *r)
{
	double ps = r->period_s > 0 ? r->period_s : 1.0;
	size_t per = (size_t)llround(r->window_s / ps);
	if (per < 1)
		per = 1;
	size_t nw = (r->np + per - 1) / per;
	free(r->w);
	r->w = calloc(nw ? nw : 1, sizeof(*r->w));
	if (!r->w)
		return -ENOMEM;
	r->nw = nw;
	double tok_total = 0, e[3] = { 0 };
	for (size_t k = 0; k < nw; k++) {
		struct rp_wstats *w = &r->w[k];
		size_t i0 = k * per, i1 = i0 + per < r->np ? i0 + per : r->np;
		const struct rp_period *close = &r->p[i1 - 1];
		w->t0_s = r->p[i0].t_s;
		w->t1_s = close->t_s + ps;
		w->periods = i1 - i0;
		w->ceiling_c = r->ceiling_c;
		w->slowdown_c = r->slowdown_c;
		w->min_clk_mhz = INFINITY;
		w->max_tj_c = -INFINITY;
		double ew = 0, host = 0, lim = 0, q = 0;
		bool work = false;
		for (size_t i = i0; i < i1; i++) {
			const struct rp_period *p = &r->p[i];
			double tot = p->p_accel_w + p->p_mem_w + p->p_host_w;
			ew += tot * ps;
			e[0] += p->p_accel_w * ps;
			e[1] += p->p_mem_w * ps;
			e[2] += p->p_host_w * ps;
			host += p->p_host_w * ps;
			w->mean_util += p->util;
			w->mean_clk_mhz += p->clk_mhz;
			if (p->clk_mhz < w->min_clk_mhz)
				w->min_clk_mhz = p->clk_mhz;
			if (p->tj_c > w->max_tj_c)
				w->max_tj_c = p->tj_c;
			w->clamp_periods += !!(p->throttle & HAL_THR_HW_SLOWDOWN);
			w->swtherm_periods += !!(p->throttle & HAL_THR_SW_THERMAL);
			w->cap_periods += !!(p->throttle & HAL_THR_POWER_CAP);
			w->mean_accel_w += p->p_accel_w;
			lim += p->power_limit_w;
			q += p->queue_len;
			if (p->queue_len > w->max_queue)
				w->max_queue = p->queue_len;
			work |= p->queue_len > 0 || p->running > 0;
		}
		double n = (double)w->periods;
		w->mean_util /= n;
		w->mean_clk_mhz /= n;
		w->mean_accel_w /= n;
		w->mean_limit_w = lim / n;
		w->power_ratio = w->mean_limit_w > 0 ? w->mean_accel_w / w->mean_limit_w : NAN;
		w->mean_queue = q / n;
		w->energy_j = ew;
		w->host_share = ew > 0 ? host / ew : NAN;
		/* The estimator's window at the close covers the last ring periods:
		 * tokens_per_s x its length is the window's tokens. */
		double cover = close->win_s > 0 ? close->win_s : n * ps;
		if (cover > n * ps)
			cover = n * ps;
		w->tokens = close->tokens_per_s * cover;
		tok_total += w->tokens;
		w->tpj = ew > 0 ? w->tokens / ew : NAN;
		w->int8_share = close->int8_share;
		memcpy(w->q_ms, close->q_ms, sizeof(w->q_ms));
		w->requests = close->win_requests;
		window_judge(r, k, work, close, w);
		w->busy = w->judged || (!w->tail && w->mean_util >= rp_default_thresholds.busy_util);
		w->clock_sens = NAN;
	}
	r->recomputed_tokens = tok_total;
	r->recomputed_energy_j = e[0] + e[1] + e[2];

	/* Run figures a decision log alone does not carry. */
	double met_tokens = 0, judged = 0, met = 0;
	for (size_t k = 0; k < nw; k++) {
		judged += r->w[k].judged;
		met += r->w[k].sla_met;
		/* The sim's true tokens of the window when it wrote them. */
		if (r->w[k].sla_met)
			met_tokens += k < r->nsw && isfinite(r->sw[k].tokens) ? r->sw[k].tokens : r->w[k].tokens;
	}
	/* Summary and plots count the same windows: the judged ones. */
	if (!r->have_summary || r->nsw) {
		r->windows = judged;
		r->windows_met = met;
		r->attainment = judged > 0 ? met / judged : 1.0;
	}
	if (!r->have_summary) {
		r->duration_s = (double)r->np * ps;
		r->tokens = tok_total;
		r->e_accel = e[0];
		r->e_mem = e[1];
		r->e_host = e[2];
		r->e_total = e[0] + e[1] + e[2];
		r->tpj = r->e_total > 0 ? r->tokens / r->e_total : NAN;
		for (size_t i = 0; i < SLA_N_ROWS; i++)
			r->q_ms[i] = 0;
		double i8 = 0;
		for (size_t k = 0; k < nw; k++) {
			const struct rp_wstats *w = &r->w[k];
			if (!w->judged)
				continue;
			for (size_t i = 0; i < SLA_N_ROWS; i++)
				r->q_ms[i] = fmax(r->q_ms[i], w->q_ms[i]);
			i8 += (isfinite(w->int8_share) ? w->int8_share : 0) * w->tokens;
		}
		r->int8_token_frac = tok_total > 0 ? i8 / tok_total : NAN;
		r->max_tj_c = -INFINITY;
		r->clamp_events = r->clamp_time_s = r->above_ceiling_s = 0;
		r->rollbacks = r->telemetry_faults = 0;
		for (size_t i = 0; i < r->np; i++) {
			const struct rp_period *p = &r->p[i], *prev = i ? &r->p[i - 1] : NULL;
			r->max_tj_c = fmax(r->max_tj_c, p->tj_c);
			bool cl = p->throttle & HAL_THR_HW_SLOWDOWN;
			r->clamp_events += cl && !(prev && (prev->throttle & HAL_THR_HW_SLOWDOWN));
			r->clamp_time_s += cl ? ps : 0;
			r->above_ceiling_s += p->tj_c > r->ceiling_c ? ps : 0;
			r->rollbacks += !!(p->reasons & GOV_R_ROLLBACK);
			r->telemetry_faults += p->n_faults > 0 && !(prev && prev->n_faults > 0);
		}
		r->breaches = NAN;
	}
	r->tpj_sla = r->e_total > 0 ? met_tokens / r->e_total : NAN;
	/* Per slice: the worst drop bound while INT8 was set; the mean set share
	 * stands in for the served share when there is no summary. */
	for (size_t s = 0; s < r->n_slices; s++) {
		struct rp_slice *sl = &r->slices[s];
		double worst = NAN, set = 0;
		for (size_t i = 0; i < r->np; i++) {
			const struct rp_period *p = &r->p[i];
			double f = isfinite(p->int8_after[s]) ? p->int8_after[s] : 0;
			set += f;
			if (f > 0 && isfinite(p->q_drop_upper[s]) && !(p->q_drop_upper[s] <= worst))
				worst = p->q_drop_upper[s];
		}
		sl->max_drop_upper_int8 = worst;
		if (!r->have_summary)
			sl->int8_req_frac = r->np ? set / (double)r->np : NAN;
	}
	return 0;
}
