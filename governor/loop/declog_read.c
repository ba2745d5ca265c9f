/* The decision log's reader (declog_read.h); the keys are the writer's
 * (declog.c) and docs/decision-log.md's. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsafe.h"
#include "common/jsonx.h"
#include "governor/loop/declog.h"
#include "governor/loop/declog_read.h"
#include "governor/policy/opoint.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* A JSON number as an integer type: malformed logs must not reach an
 * out-of-range float conversion (undefined behaviour). */
static uint64_t jcount(json_t *o, const char *k, uint64_t max)
{
	double v = jsonx_num(o, k);
	if (!(v >= 0))
		return 0;
	return v >= (double)max ? max : (uint64_t)v;
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

/* What a header must carry for the periods and slices to mean anything. */
static const char *header_error(json_t *h)
{
	json_t *sv = json_object_get(h, "schema_version");
	if (sv && !(json_is_integer(sv) && json_integer_value(sv) >= 1))
		return "header schema_version is not a positive integer";
	if (sv && json_integer_value(sv) > DECLOG_SCHEMA_VERSION)
		return "header schema_version is newer than this reader's (" STR(DECLOG_SCHEMA_VERSION) ")";
	double ms = jsonx_num(h, "period_ms");
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

/* A compact log's header names its heartbeat: the periods one gap may hold
 * (a record is due every heartbeat). 0: a full log. */
static uint64_t compact_max_gap(json_t *h)
{
	const char *mode = json_string_value(json_object_get(h, "log_mode"));
	double hb = jsonx_num(h, "heartbeat_ms"), per = jsonx_num(h, "period_ms");
	if (!mode || strcmp(mode, "compact") || !(hb >= 1 && hb <= 3600e3) || !(per >= 1))
		return 0;
	return (uint64_t)ceil(hb / per);
}

static void read_header(struct declog_head *r, json_t *h, size_t line)
{
	memset(r, 0, sizeof(*r));
	json_t *sv = json_object_get(h, "schema_version");
	r->schema_version = sv ? (uint32_t)json_integer_value(sv) : 1;
	jsonx_str(h, "govd_version", r->govd_version, sizeof(r->govd_version));
	jsonx_str(h, "scenario", r->scenario, sizeof(r->scenario));
	jsonx_str(h, "policy", r->policy, sizeof(r->policy));
	jsonx_str(h, "policy_path", r->policy_path, sizeof(r->policy_path));
	jsonx_str(h, "policy_hash", r->policy_hash, sizeof(r->policy_hash));
	jsonx_str(h, "controller", r->controller, sizeof(r->controller));
	jsonx_str(h, "scenario_path", r->scenario_path, sizeof(r->scenario_path));
	jsonx_str(h, "command", r->command, sizeof(r->command));
	jsonx_str(json_object_get(h, "versions"), "compiler", r->compiler, sizeof(r->compiler));
	r->period_ms = jsonx_num(h, "period_ms");
	r->dry_run = json_is_true(json_object_get(h, "dry_run"));
	r->seed = jcount(h, "seed", UINT64_MAX);
	json_t *d = json_object_get(h, "device");
	jsonx_str(d, "name", r->dev_name, sizeof(r->dev_name));
	jsonx_str(d, "model", r->dev_model, sizeof(r->dev_model));
	jsonx_str(d, "driver_version", r->driver, sizeof(r->driver));
	jsonx_str(d, "firmware_version", r->firmware, sizeof(r->firmware));
	r->slowdown_mc = jsonx_num(d, "slowdown_mc");
	r->shutdown_mc = jsonx_num(d, "shutdown_mc");
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(h, "slices"), i, v)
		jsonx_copy_utf8(r->slice[r->n_slices++], HAL_NAME_LEN, json_string_value(v));
	r->compact_gap = compact_max_gap(h);
	r->line = line;
}

/* The controller's explanation (absent before the key existed, or from a
 * controller that gives none); an unknown term name leaves it not valid. */
static void read_why(json_t *w, struct gov_why *out)
{
	memset(out, 0, sizeof(*out));
	int b = gov_why_bound_parse(json_string_value(json_object_get(w, "bound")));
	int l = gov_why_limit_parse(json_string_value(json_object_get(w, "lower_limit")));
	if (!json_is_object(w) || b < 0 || l < 0)
		return;
	out->valid = true;
	out->bound = (enum gov_why_bound)b;
	out->lower_limit = (enum gov_why_limit)l;
	out->clk_mhz = jsonx_num(w, "clk_mhz");
	out->model_mhz = jsonx_num(w, "model_mhz");
	out->tbt_pred_ms = jsonx_num(w, "tbt_pred_ms");
	out->ttft_pred_ms = jsonx_num(w, "ttft_pred_ms");
	out->lower_mhz = jsonx_num(w, "lower_mhz");
	out->tbt_lower_ms = jsonx_num(w, "tbt_lower_ms");
	out->ttft_lower_ms = jsonx_num(w, "ttft_lower_ms");
	out->margin = jsonx_num(w, "margin");
	out->sigmas = jsonx_num(w, "sigmas");
	out->floor_mhz = jsonx_num(w, "floor_mhz");
	const char *fl = json_string_value(json_object_get(w, "floor"));
	out->floor_load = fl && !strcmp(fl, "load");
	out->tail_ratio = jsonx_num(w, "tail_ratio");
	/* Added with the search's guards; absent in older logs: none. */
	out->base_mhz = jsonx_num(w, "base_mhz");
	out->bar_mhz = jsonx_num(w, "bar_mhz");
	int m = gov_why_move_parse(json_string_value(json_object_get(w, "move")));
	out->move = m < 0 ? GOV_WHY_M_NONE : (enum gov_why_move)m;
	/* Added with the search's load classes; absent, null or unknown: one base. */
	out->load = gov_why_load_parse(json_string_value(json_object_get(w, "load")));
	/* Added with thermal_floor_share; absent or null: NaN. */
	out->heat_floor_w = jsonx_num(w, "heat_floor_w");
}

static void read_decision(const struct declog_head *h, json_t *d, struct declog_period *p)
{
	memset(p, 0, sizeof(*p));
	json_t *in = json_object_get(d, "inputs");
	p->t_s = jsonx_num(d, "t_ms") / 1000.0;
	p->clk_mhz = jsonx_num(in, "clk_mhz");
	p->power_limit_w = jsonx_num(in, "power_limit_w");
	p->p_accel_w = jsonx_num2(in, "power_w", "accel");
	p->p_mem_w = jsonx_num2(in, "power_w", "memory");
	p->p_host_w = jsonx_num2(in, "power_w", "host");
	p->tj_c = jsonx_num2(in, "temp_c", "junction");
	p->tmem_c = jsonx_num2(in, "temp_c", "memory");
	p->tin_c = jsonx_num2(in, "temp_c", "inlet");
	p->util = jsonx_num(in, "util");
	p->tokens_per_s = jsonx_num(in, "tokens_per_s");
	p->int8_share = jsonx_num(in, "int8_token_share");
	json_t *sla = json_object_get(in, "sla");
	p->win_s = jsonx_num(sla, "window_s");
	p->win_requests = jsonx_num(sla, "requests");
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		p->q_ms[i] = jsonx_num(sla, sla_rows[i].key);
	p->queue_len = jsonx_num(in, "queue_len");
	p->running = jsonx_num(in, "running");
	p->throttle = (uint32_t)jcount(in, "throttle", UINT32_MAX);
	p->reasons = reason_bits(json_object_get(d, "reasons"));
	p->n_faults = json_array_size(json_object_get(d, "faults"));
	json_t *after = json_object_get(d, "after");
	p->clk_locked = json_is_true(json_object_get(after, "clk_locked"));
	read_int8(json_object_get(d, "before"), p->int8_before, h->n_slices);
	read_int8(after, p->int8_after, h->n_slices);
	json_t *q = json_object_get(in, "quality");
	for (size_t i = 0; i < h->n_slices; i++) {
		json_t *qs = json_array_get(q, i);
		p->q_drop_upper[i] = jsonx_num(qs, "drop_upper");
		p->q_samples[i] = jsonx_num(qs, "samples");
		if (json_is_true(json_object_get(qs, "gate_open")))
			p->gate_open |= 1u << i;
		if (json_object_get(qs, "detect_held_s"))
			p->detect_held |= 1u << i;
		if (json_is_true(json_object_get(qs, "mix_held")))
			p->mix_held |= 1u << i;
	}
	read_why(json_object_get(d, "why"), &p->why);
}

struct reader {
	const struct declog_read_cb *cb;
	void *ctx;
	struct declog_head head;
	bool have_head;
	struct declog_period last; /* the last period handed back */
	uint64_t n_periods;
	double prev_seq;
};

/* Hands back n copies of the last period, each one period later (a compact
 * log's unchanged periods; fill_gap() asks for none before a first period). */
static int copies(struct reader *rd, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		rd->last.t_s += rd->head.period_ms / 1000.0;
		int rc = rd->cb->period(rd->ctx, &rd->last, true);
		if (rc)
			return rc;
		rd->n_periods++;
	}
	return 0;
}

/* The periods a compact log's record at seq left out before it (restore:
 * including its own, the last period's seq). -EINVAL past the heartbeat. */
static int fill_gap(struct reader *rd, double seq, bool decision, uint64_t *out)
{
	*out = 0;
	if (!rd->head.compact_gap || !rd->n_periods)
		return 0;
	double first = rd->prev_seq + (decision ? 1 : 0);
	if (!(seq > first))
		return 0;
	*out = (uint64_t)(seq - first);
	return *out > rd->head.compact_gap ? -EINVAL : 0;
}

static int record(struct reader *rd, json_t *o, const char *path, size_t lineno, char *err,
		  size_t errlen)
{
	const char *type = json_string_value(json_object_get(o, "type"));
	bool is_head = type && !strcmp(type, "header"), is_dec = type && !strcmp(type, "decision");
	bool is_restore = type && !strcmp(type, "restore");
	const char *bad = NULL;
	if (is_head)
		/* A second header would add its slices to the first's. */
		bad = rd->have_head ? "a second header (two logs concatenated?)" : header_error(o);
	else if (is_dec)
		bad = !rd->have_head ? "decision before the header"
		      : !json_is_number(json_object_get(o, "t_ms")) ? "decision without a numeric t_ms"
		      : !json_is_object(json_object_get(o, "inputs")) ? "decision without inputs"
								       : NULL;
	if (bad)
		return jsonx_fail(err, errlen, -EINVAL, "%s:%zu:1: error: %s", path, lineno, bad);
	int rc = 0;
	if (is_head) {
		read_header(&rd->head, o, lineno);
		rd->have_head = true;
		if ((rc = rd->cb->header(rd->ctx, &rd->head)))
			return jsonx_fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
		return 0;
	}
	if (!is_dec && !(is_restore && rd->have_head))
		return 0;
	double seq = jsonx_num(o, "seq");
	uint64_t gap;
	if (fill_gap(rd, seq, is_dec, &gap))
		return jsonx_fail(err, errlen, -EINVAL,
			    "%s:%zu:1: error: seq jumps over %llu periods, more than the header's "
			    "heartbeat_ms allows (%llu)", path, lineno, (unsigned long long)gap,
			    (unsigned long long)rd->head.compact_gap);
	if ((rc = copies(rd, gap)))
		return jsonx_fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
	if (is_restore) {
		/* A compact log's restore record carries the last period's seq:
		 * the periods after the last decision record are its copies. */
		if (gap)
			rd->prev_seq = seq;
		return 0;
	}
	read_decision(&rd->head, o, &rd->last);
	if ((rc = rd->cb->period(rd->ctx, &rd->last, false)))
		return jsonx_fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
	rd->n_periods++;
	if (isfinite(seq))
		rd->prev_seq = seq;
	return 0;
}

int declog_read(const char *path, uint64_t max_bytes, const struct declog_read_cb *cb, void *ctx,
		char *err, size_t errlen)
{
	struct fsafe_err fe;
	FILE *f = fsafe_fopen_read(path, max_bytes, &fe);
	if (!f)
		return jsonx_fail(err, errlen, -errno, "%s: %s", path, fe.msg);
	struct reader *rd = calloc(1, sizeof(*rd));
	if (!rd) {
		fclose(f);
		return jsonx_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	rd->cb = cb;
	rd->ctx = ctx;
	rd->prev_seq = -1;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	long len;
	int rc = 0;
	while ((len = fsafe_getline(f, &line, &cap, FSAFE_MAX_LINE)) > 0 || len == -E2BIG) {
		lineno++;
		if (len == -E2BIG) {
			rc = jsonx_fail(err, errlen, -EFBIG, "%s:%zu:1: error: line longer than %u bytes",
				  path, lineno, FSAFE_MAX_LINE);
			goto out_free;
		}
		/* A last line without its newline is a write torn by a crash
		 * (kill -9): the log is valid up to its last complete line. */
		if (line[len - 1] != '\n' && feof(f))
			break;
		json_error_t je;
		json_t *o = json_loadb(line, (size_t)len, 0, &je);
		if (!o) {
			rc = jsonx_fail(err, errlen, -EINVAL, "%s:%zu:%d: error: %s", path, lineno,
				  je.column > 0 ? je.column : 1, je.text);
			goto out_free;
		}
		rc = record(rd, o, path, lineno, err, errlen);
		json_decref(o);
		if (rc)
			goto out_free;
	}
	if (!rd->have_head)
		rc = jsonx_fail(err, errlen, -EINVAL, "%s:1:1: error: no header record (not a decision log?)",
			  path);
	else if (!rd->n_periods)
		rc = jsonx_fail(err, errlen, -EINVAL, "%s:%zu:1: error: a header but no decision records",
			  path, rd->head.line);
out_free:
	free(line);
	free(rd);
	fclose(f);
	return rc;
}
