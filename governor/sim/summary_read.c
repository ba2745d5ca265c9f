/* summary.json's reader (summary_read.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsafe.h"
#include "common/jsonx.h"
#include "governor/sim/summary_read.h"

/* What a verdict rests on: a summary without one of these is refused. */
static const char *missing(json_t *s, char *why, size_t len)
{
	static const char *const need[][2] = {
		{ "tokens_generated", NULL },  { "tokens_per_joule", NULL },
		{ "energy_j", "total" },       { "sla", "attainment" },
		{ "thermal", "clamp_events" }, { "quality", "breach_requests" },
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
	return NULL;
}

/* The slice of that name, added if new (NULL: no room, or too long). */
static struct sim_summary_slice *slice_at(struct sim_summary *s, const char *name)
{
	const struct sim_summary_slice *have = sim_summary_slice(s, name);
	if (have)
		return &s->slice[have - s->slice];
	if (s->n_slices == HAL_MAX_SLICES || strlen(name) >= HAL_NAME_LEN)
		return NULL;
	struct sim_summary_slice *x = &s->slice[s->n_slices++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->int8_request_fraction = x->int8_token_share_of_all = NAN;
	x->max_drop = x->true_drop_end = x->breach_requests = NAN;
	return x;
}

static void read_slices(struct sim_summary *s, json_t *doc)
{
	const char *name;
	json_t *v;
	json_object_foreach(json_object_get(json_object_get(doc, "precision"), "per_slice"), name, v)
	{
		struct sim_summary_slice *x = slice_at(s, name);
		if (!x)
			continue;
		x->int8_request_fraction = jsonx_num(v, "int8_request_fraction");
		x->int8_token_share_of_all = jsonx_num(v, "int8_token_share_of_all");
	}
	json_object_foreach(json_object_get(json_object_get(doc, "quality"), "per_slice"), name, v)
	{
		struct sim_summary_slice *x = json_is_object(v) ? slice_at(s, name) : NULL;
		if (!x)
			continue;
		x->in_quality = true;
		x->max_drop = jsonx_num(v, "max_drop");
		x->true_drop_end = jsonx_num(v, "true_drop_end");
		x->breach_requests = jsonx_num(v, "breach_requests");
	}
}

static int read_windows(struct sim_summary *s, json_t *sla)
{
	json_t *pw = json_object_get(sla, "per_window");
	if (!json_is_array(pw) || !json_array_size(pw))
		return 0;
	s->win = calloc(json_array_size(pw), sizeof(*s->win));
	if (!s->win)
		return -ENOMEM;
	size_t i;
	json_t *x;
	json_array_foreach(pw, i, x)
	{
		struct sim_summary_window *w = &s->win[s->n_win++];
		w->idle = json_is_true(json_object_get(x, "idle"));
		w->tail = json_is_true(json_object_get(x, "tail"));
		w->sla_met = json_is_true(json_object_get(x, "sla_met"));
		w->tokens = jsonx_num(x, "tokens");
		for (size_t q = 0; q < SLA_N_ROWS; q++)
			w->q_ms[q] = jsonx_num(x, sla_rows[q].key);
	}
	return 0;
}

static double zero_if_absent(double v)
{
	return isfinite(v) ? v : 0;
}

int sim_summary_load(const char *path, size_t max_bytes, struct sim_summary *s, char *err,
		     size_t errlen)
{
	memset(s, 0, sizeof(*s));
	struct fsafe_err fe;
	json_error_t je = { .line = 0 };
	char *text = NULL;
	size_t tl = 0;
	json_t *doc = NULL;
	if (fsafe_read_all(path, max_bytes, 0, &text, &tl, &fe))
		snprintf(je.text, sizeof(je.text), "%.150s", fe.msg);
	else
		doc = json_loadb(text, tl, 0, &je);
	free(text);
	if (!doc)
		return jsonx_fail(err, errlen, -EINVAL, "%s:%d:%d: error: %s", path, je.line, je.column,
				  je.text);
	char why[200];
	const char *bad = missing(doc, why, sizeof(why));
	if (bad) {
		json_decref(doc);
		return jsonx_fail(err, errlen, -EINVAL, "%s: error: %s", path, bad);
	}
	s->doc = doc;
	jsonx_str(doc, "scenario_path", s->scenario_path, sizeof(s->scenario_path));
	jsonx_str(doc, "command", s->command, sizeof(s->command));
	jsonx_str(doc, "compiler", s->compiler, sizeof(s->compiler));
	s->duration_s = jsonx_num(doc, "duration_s");
	s->tokens_generated = jsonx_num(doc, "tokens_generated");
	s->tokens_per_joule = jsonx_num(doc, "tokens_per_joule");
	s->energy_accel_j = jsonx_num2(doc, "energy_j", "accel");
	s->energy_memory_j = jsonx_num2(doc, "energy_j", "memory");
	s->energy_host_j = jsonx_num2(doc, "energy_j", "host");
	s->energy_total_j = jsonx_num2(doc, "energy_j", "total");
	json_t *sla = json_object_get(doc, "sla");
	s->window_s = jsonx_num(sla, "window_s");
	s->windows = jsonx_num(sla, "windows");
	s->windows_met = jsonx_num(sla, "windows_met");
	s->attainment = jsonx_num(sla, "attainment");
	json_t *t = json_object_get(sla, "targets");
	for (size_t i = 0; i < SLA_N_ROWS; i++) {
		s->q_ms[i] = jsonx_num(sla, sla_rows[i].key);
		s->targets_ms[i] = zero_if_absent(jsonx_num(t, sla_rows[i].key));
	}
	s->min_tokens_per_s = zero_if_absent(jsonx_num(t, "min_tokens_per_s"));
	s->attainment_goal = jsonx_num(t, "attainment");
	json_t *th = json_object_get(doc, "thermal");
	s->ceiling_c = jsonx_num(th, "ceiling_c");
	s->max_junction_c = jsonx_num(th, "max_junction_c");
	s->clamp_events = jsonx_num(th, "clamp_events");
	s->clamp_time_s = jsonx_num(th, "clamp_time_s");
	s->time_above_ceiling_s = jsonx_num(th, "time_above_ceiling_s");
	s->int8_token_fraction = jsonx_num2(doc, "precision", "int8_token_fraction");
	s->fp8_token_fraction = jsonx_num2(doc, "precision", "fp8_token_fraction");
	s->breach_requests = jsonx_num2(doc, "quality", "breach_requests");
	s->breach_requests_beyond_delay = jsonx_num2(doc, "quality", "breach_requests_beyond_delay");
	s->rollbacks = jsonx_num(doc, "rollbacks");
	s->clock_changes_per_min = jsonx_num2(doc, "clock", "changes_per_min");
	s->mean_locked_mhz = jsonx_num2(doc, "clock", "mean_locked_mhz");
	s->telemetry_faults = jsonx_num(doc, "telemetry_faults");
	s->failed = json_is_true(json_object_get(doc, "failed"));
	jsonx_str(doc, "fail_reason", s->fail_reason, sizeof(s->fail_reason));
	read_slices(s, doc);
	if (read_windows(s, sla)) {
		sim_summary_free(s);
		return jsonx_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	return 0;
}

const struct sim_summary_slice *sim_summary_slice(const struct sim_summary *s, const char *name)
{
	for (size_t i = 0; i < s->n_slices; i++)
		if (!strcmp(s->slice[i].name, name))
			return &s->slice[i];
	return NULL;
}

void sim_summary_free(struct sim_summary *s)
{
	json_decref(s->doc);
	free(s->win);
	s->doc = NULL;
	s->win = NULL;
	s->n_win = 0;
}
