/* Scenario loader: YAML (docs/scenarios.md) -> struct scenario, via ycfg.
 * Every key is checked (unknown, duplicate, type, range, enum); all problems
 * of a file are collected before returning. */
#include "plant_models/scenario.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "common/ycfg.h"
#include "plant_models/device.h"

#define SCENARIO_MAX_EVENTS 10000
#define DAY_S 86400.0

static const char *const event_kind_names[] = {"inlet", "cooling", "load", "quality_drift",
						"sensor_fault", "meter_loss", NULL};
static const char *const sensor_names[] = {"junction", "memory_temp", "inlet", "power_accel",
					   "power_memory", "power_host", "clock", NULL};
static const char *const fault_names[] = {"stuck", "nan", "dropout", "value", NULL};
static const char *const workload_kind_names[] = {"trace", "generator", NULL};

const char *event_kind_name(enum event_kind k)
{
	return (unsigned)k < sizeof(event_kind_names) / sizeof(event_kind_names[0]) - 1
		       ? event_kind_names[k]
		       : "?";
}

const char *sensor_name(enum sensor_id s)
{
	return (unsigned)s < SENSOR_N ? sensor_names[s] : "?";
}

/* Problems are counted where they are reported, in the diag list: the ycfg
 * getters and err() add an error for every failure. */
struct loader {
	struct ycfg y;
	struct scenario *s;
};

static void err(struct loader *ld, const yaml_node_t *n, const char *path, const char *code,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void err(struct loader *ld, const yaml_node_t *n, const char *path, const char *code,
		const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ycfg_error(&ld->y, n, path, code, "%s", msg);
}

/* --------------------------------------------------------------- helpers */

static bool file_readable(const char *p)
{
	return access(p, R_OK) == 0;
}

/* "${NAME}" -> getenv(NAME). Unset or empty variables are errors: silently
 * dropping them would turn "${X}/a.csv" into "/a.csv". */
static int expand_env(struct loader *ld, const yaml_node_t *n, const char *path, const char *in,
		      char *out, size_t len)
{
	size_t k = 0;
	for (const char *p = in; *p;) {
		if (p[0] == '$' && p[1] == '{') {
			const char *end = strchr(p + 2, '}');
			if (!end) {
				err(ld, n, path, "env", "unterminated '${' in '%s'; write ${NAME}", in);
				return -EINVAL;
			}
			char name[128];
			size_t nl = (size_t)(end - p - 2);
			if (nl == 0 || nl >= sizeof(name)) {
				err(ld, n, path, "env", "bad variable name in '%s'; write ${NAME}", in);
				return -EINVAL;
			}
			memcpy(name, p + 2, nl);
			name[nl] = '\0';
			const char *v = getenv(name);
			if (!v || !v[0]) {
				err(ld, n, path, "env",
				    "environment variable %s is not set (used in '%s')", name, in);
				return -EINVAL;
			}
			size_t vl = strlen(v);
			if (k + vl >= len)
				goto too_long;
			memcpy(out + k, v, vl);
			k += vl;
			p = end + 1;
			continue;
		}
		if (k + 1 >= len)
			goto too_long;
		out[k++] = *p++;
	}
	out[k] = '\0';
	return 0;
too_long:
	err(ld, n, path, "range", "path longer than %zu characters after expansion", len - 1);
	return -ENAMETOOLONG;
}

/* Trace lookup (docs/scenarios.md): relative to the scenario file, then
 * $GOVD_SHARED_DATA, then traces/ and shared/data/ in the scenario's parent
 * folders (where tools/fetch-traces and the shared data folder put them). */
static int resolve_trace(struct loader *ld, const yaml_node_t *n, const char *path,
			 const char *value, char *out, size_t len)
{
	char expanded[4096], first[4096], cand[4096 + 64];
	int rc = expand_env(ld, n, path, value, expanded, sizeof(expanded));
	if (rc)
		return rc;
	if (ycfg_resolve_path(&ld->y, expanded, first, sizeof(first))) {
		err(ld, n, path, "range", "path too long");
		return -ENAMETOOLONG;
	}
	if (file_readable(first))
		goto found_first;
	if (expanded[0] != '/') {
		const char *shared = getenv("GOVD_SHARED_DATA");
		if (shared && shared[0]) {
			int w = snprintf(cand, sizeof(cand), "%s/%s", shared, expanded);
			if (w > 0 && (size_t)w < sizeof(cand) && file_readable(cand))
				goto found_cand;
		}
		char dir[PATH_MAX];
		const char *slash = strrchr(ld->y.file, '/');
		char sdir[4096];
		snprintf(sdir, sizeof(sdir), "%.*s", slash ? (int)(slash - ld->y.file) : 1,
			 slash ? ld->y.file : ".");
		if (realpath(sdir[0] ? sdir : "/", dir)) {
			for (int depth = 0; depth < 8; depth++) {
				static const char *const sub[] = {"traces", "shared/data"};
				for (int i = 0; i < 2; i++) {
					int w = snprintf(cand, sizeof(cand), "%s/%s/%s",
							 strcmp(dir, "/") ? dir : "", sub[i], expanded);
					if (w > 0 && (size_t)w < sizeof(cand) && file_readable(cand))
						goto found_cand;
				}
				char *up = strrchr(dir, '/');
				if (!up || up == dir)
					break;
				*up = '\0';
			}
		}
	}
	err(ld, n, path, "trace-missing",
	    "trace file %s not found (also searched $GOVD_SHARED_DATA and traces/, shared/data/ "
	    "in parent folders); tools/fetch-traces downloads the Azure LLM traces",
	    first);
	return -ENOENT;

found_first:
	snprintf(cand, sizeof(cand), "%s", first);
found_cand:
	if (strlen(cand) >= len) {
		err(ld, n, path, "range", "resolved path too long");
		return -ENAMETOOLONG;
	}
	memcpy(out, cand, strlen(cand) + 1);
	return 0;
}

static double get_d(struct loader *ld, yaml_node_t *m, const char *path, const char *key,
		    bool required, double min, double max, double def)
{
	double v = def;
	ycfg_double(&ld->y, m, path, key, required, min, max, &v);
	return v;
}

static long long get_i(struct loader *ld, yaml_node_t *m, const char *path, const char *key,
		       long long min, long long max, long long def)
{
	long long v = def;
	ycfg_int(&ld->y, m, path, key, false, min, max, &v);
	return v;
}

/* A sub-mapping that may be absent; reports non-mappings. */
static yaml_node_t *section(struct loader *ld, yaml_node_t *parent, const char *key,
			    const char *const *keys)
{
	yaml_node_t *m = ycfg_get(&ld->y, parent, key);
	if (!m)
		return NULL;
	if (!ycfg_is_map(&ld->y, m, key))
		return NULL;
	ycfg_check_keys(&ld->y, m, key, keys);
	return m;
}

/* ---------------------------------------------------------------- sections */

static void read_environment(struct loader *ld, yaml_node_t *root)
{
	static const char *const keys[] = {"inlet_c", "cooling_factor", "memory_c_offset", NULL};
	yaml_node_t *m = section(ld, root, "environment", keys);
	struct scenario *s = ld->s;
	s->inlet_c = get_d(ld, m, "environment", "inlet_c", false, 0, 60, 25.0);
	s->cooling_factor = get_d(ld, m, "environment", "cooling_factor", false, 0.1, 10, 1.0);
	s->memory_c_offset = get_d(ld, m, "environment", "memory_c_offset", false, -30, 30, 0.0);
}

static void read_server(struct loader *ld, yaml_node_t *root)
{
	static const char *const keys[] = {"max_batch", "max_queue", "kv_capacity_tokens",
					   "batch_timeout_ms", "chunked_prefill", "max_prefill_tokens",
					   "stack", "fp8_engine", NULL};
	yaml_node_t *m = section(ld, root, "server", keys);
	struct server_cfg *c = &ld->s->server;
	c->max_batch = (uint32_t)get_i(ld, m, "server", "max_batch", 0, 4096, 0);
	c->max_queue = (uint32_t)get_i(ld, m, "server", "max_queue", 0, 10000000, 0);
	c->kv_capacity_tokens =
		(uint64_t)get_i(ld, m, "server", "kv_capacity_tokens", 0, 1000000000LL, 0);
	c->batch_timeout_ms = get_d(ld, m, "server", "batch_timeout_ms", false, 0, 10000, 5.0);
	c->chunked_prefill = true; /* vLLM V1's default scheduling */
	ycfg_bool(&ld->y, m, "server", "chunked_prefill", false, &c->chunked_prefill);
	c->fp8_engine = false;
	ycfg_bool(&ld->y, m, "server", "fp8_engine", false, &c->fp8_engine);
	c->max_prefill_tokens =
		(uint32_t)get_i(ld, m, "server", "max_prefill_tokens", 0, 1048576, 0);
	/* The serving stack's per-iteration costs; absent: the model's own. */
	const char *const *stacks = serving_stack_names();
	int si = -1;
	c->stack = NULL;
	if (m && ycfg_get(&ld->y, m, "stack") &&
	    ycfg_enum(&ld->y, m, "server", "stack", false, stacks, &si) == 0)
		c->stack = serving_stack_find(stacks[si]);
}

static void read_generator(struct loader *ld, yaml_node_t *m, struct generator_params *g)
{
	const char *p = "workload.generator";
	g->rate_rps = get_d(ld, m, p, "rate_rps", false, 0.001, 100000, g->rate_rps);
	g->burst_cv = get_d(ld, m, p, "burst_cv", false, 0.05, 100, g->burst_cv);
	g->burst_on_fraction =
		get_d(ld, m, p, "burst_on_fraction", false, 0.01, 0.99, g->burst_on_fraction);
	g->diurnal_amplitude =
		get_d(ld, m, p, "diurnal_amplitude", false, 0, 1, g->diurnal_amplitude);
	g->diurnal_period_s =
		get_d(ld, m, p, "diurnal_period_s", false, 1, 30 * DAY_S, g->diurnal_period_s);
	g->diurnal_phase_s =
		get_d(ld, m, p, "diurnal_phase_s", false, -30 * DAY_S, 30 * DAY_S, g->diurnal_phase_s);
	g->ctx_mu = get_d(ld, m, p, "ctx_mu", false, 0, 15, g->ctx_mu);
	g->ctx_sigma = get_d(ld, m, p, "ctx_sigma", false, 0, 5, g->ctx_sigma);
	g->gen_mu = get_d(ld, m, p, "gen_mu", false, 0, 12, g->gen_mu);
	g->gen_sigma = get_d(ld, m, p, "gen_sigma", false, 0, 5, g->gen_sigma);
	g->ctx_max = (uint32_t)get_i(ld, m, p, "ctx_max_tokens", 1, 1 << 20, g->ctx_max);
	g->gen_max = (uint32_t)get_i(ld, m, p, "gen_max_tokens", 1, 1 << 20, g->gen_max);
}

static void read_workload(struct loader *ld, yaml_node_t *root)
{
	static const char *const keys[] = {"kind", "trace", "time_scale", "loop",
					   "start_offset_s", "generator", NULL};
	static const char *const gen_keys[] = {
		"rate_rps", "burst_cv", "burst_on_fraction", "diurnal_amplitude", "diurnal_period_s",
		"diurnal_phase_s", "ctx_mu", "ctx_sigma", "gen_mu", "gen_sigma", "ctx_max_tokens",
		"gen_max_tokens", "lengths_trace", NULL};
	struct workload_cfg *w = &ld->s->workload;
	w->time_scale = 1.0;
	w->loop = true;
	w->gen = generator_azure_code_fit;
	yaml_node_t *m = ycfg_get(&ld->y, root, "workload");
	if (!m) {
		err(ld, root, "workload", "missing-key",
		    "missing required key 'workload' (a mapping with kind: trace or generator)");
		return;
	}
	if (!ycfg_is_map(&ld->y, m, "workload"))
		return;
	ycfg_check_keys(&ld->y, m, "workload", keys);
	int kind = -1;
	ycfg_enum(&ld->y, m, "workload", "kind", true, workload_kind_names, &kind);
	w->kind = kind == 1 ? WORKLOAD_GENERATOR : WORKLOAD_TRACE;
	w->time_scale = get_d(ld, m, "workload", "time_scale", false, 0.001, 1000, 1.0);
	ycfg_bool(&ld->y, m, "workload", "loop", false, &w->loop);
	w->start_offset_s = get_d(ld, m, "workload", "start_offset_s", false, 0, 30 * DAY_S, 0);

	yaml_node_t *tn = ycfg_get(&ld->y, m, "trace");
	yaml_node_t *gn = ycfg_get(&ld->y, m, "generator");
	if (kind == 0) {
		char rel[4096];
		if (!tn) {
			err(ld, m, "workload.trace", "missing-key",
			    "missing required key 'trace' (a CSV path) for kind: trace");
		} else if (ycfg_string(&ld->y, m, "workload", "trace", true, rel, sizeof(rel)) == 0) {
			if (resolve_trace(ld, tn, "workload.trace", rel, w->trace_path,
					  sizeof(w->trace_path)))
				w->trace_path[0] = '\0';
		}
		if (gn)
			err(ld, gn, "workload.generator", "not-for-kind",
			    "'generator' applies only to kind: generator (kind is trace)");
	} else if (kind == 1) {
		if (tn)
			err(ld, tn, "workload.trace", "not-for-kind",
			    "'trace' applies only to kind: trace (kind is generator)");
		if (ycfg_get(&ld->y, m, "loop") || ycfg_get(&ld->y, m, "start_offset_s")) {
			yaml_node_t *bad = ycfg_get(&ld->y, m, "loop");
			if (!bad)
				bad = ycfg_get(&ld->y, m, "start_offset_s");
			err(ld, bad, "workload", "not-for-kind",
			    "'loop' and 'start_offset_s' apply only to kind: trace");
		}
		if (gn) {
			if (ycfg_is_map(&ld->y, gn, "workload.generator")) {
				ycfg_check_keys(&ld->y, gn, "workload.generator", gen_keys);
				read_generator(ld, gn, &w->gen);
				yaml_node_t *ln = ycfg_get(&ld->y, gn, "lengths_trace");
				char rel[4096];
				if (ln && ycfg_string(&ld->y, gn, "workload.generator",
						      "lengths_trace", true, rel, sizeof(rel)) == 0 &&
				    resolve_trace(ld, ln, "workload.generator.lengths_trace", rel,
						  w->lengths_path, sizeof(w->lengths_path)))
					w->lengths_path[0] = '\0';
			}
		}
	}
}

static void read_slices(struct loader *ld, yaml_node_t *root)
{
	static const char *const keys[] = {"name", "fraction", "int8_drop", "fp8_drop", "shadow_rate",
					   NULL};
	struct scenario *s = ld->s;
	yaml_node_t *seq = ycfg_get(&ld->y, root, "slices");
	if (!seq) {
		/* One slice with everything: a scenario about thermals needs no more. */
		s->n_slices = 1;
		snprintf(s->slices[0].name, sizeof(s->slices[0].name), "all");
		s->slices[0].fraction = 1;
		return;
	}
	if (!ycfg_is_seq(&ld->y, seq, "slices"))
		return;
	size_t n = ycfg_seq_len(seq);
	if (n == 0 || n > PLANT_MAX_SLICES) {
		err(ld, seq, "slices", "range", "%zu slices given; allowed 1..%d", n,
		    PLANT_MAX_SLICES);
		if (n == 0)
			return;
		n = PLANT_MAX_SLICES;
	}
	double sum = 0;
	bool all_fractions = ycfg_seq_len(seq) <= PLANT_MAX_SLICES; /* else the sum is moot */
	for (size_t i = 0; i < n; i++) {
		char p[64];
		ycfg_index(p, sizeof(p), "slices", i);
		yaml_node_t *m = ycfg_seq_at(&ld->y, seq, i);
		struct scenario_slice *sl = &s->slices[i];
		if (!ycfg_is_map(&ld->y, m, p)) {
			all_fractions = false;
			continue;
		}
		ycfg_check_keys(&ld->y, m, p, keys);
		ycfg_string(&ld->y, m, p, "name", true, sl->name, sizeof(sl->name));
		if (sl->name[0]) {
			for (size_t j = 0; j < i; j++) {
				if (strcmp(s->slices[j].name, sl->name) == 0) {
					char kp[96];
					err(ld, ycfg_get(&ld->y, m, "name"),
					    ycfg_join(kp, sizeof(kp), p, "name"), "duplicate",
					    "slice name '%s' already used by slices[%zu]; names must be "
					    "unique",
					    sl->name, j);
					break;
				}
			}
		}
		sl->fraction = -1;
		if (ycfg_double(&ld->y, m, p, "fraction", true, 0, 1, &sl->fraction))
			all_fractions = false;
		else
			sum += sl->fraction;
		sl->int8_drop = get_d(ld, m, p, "int8_drop", false, 0, 1, 0.0);
		/* Absent: FP8 answers no better than INT8's (the cautious default). */
		sl->fp8_drop = get_d(ld, m, p, "fp8_drop", false, 0, 1, sl->int8_drop);
		sl->shadow_rate = get_d(ld, m, p, "shadow_rate", false, 0, 1, 0.0);
	}
	s->n_slices = (uint32_t)n;
	if (all_fractions && fabs(sum - 1.0) > 1e-6)
		err(ld, seq, "slices", "fraction-sum",
		    "slice fractions sum to %.9g; they must sum to 1 (within 1e-6)", sum);
}

static int slice_index(const struct scenario *s, const char *name)
{
	for (uint32_t i = 0; i < s->n_slices; i++)
		if (strcmp(s->slices[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Range of `value` per event kind, with its unit (value has no suffix). */
static bool value_range(enum event_kind k, double *min, double *max, const char **unit,
			const char **what)
{
	switch (k) {
	case EV_INLET_C:
		*min = 0, *max = 60, *unit = " C", *what = "the new inlet temperature";
		return true;
	case EV_COOLING:
		*min = 0.1, *max = 10, *unit = "", *what = "the cooling factor (thermal resistance multiplier)";
		return true;
	case EV_LOAD_SCALE:
		*min = 0.01, *max = 100, *unit = "", *what = "the arrival-rate multiplier";
		return true;
	case EV_QUALITY_DRIFT:
		*min = 0, *max = 1, *unit = "", *what = "the slice's new true INT8 (or FP8) drop";
		return true;
	default:
		return false;
	}
}

static void read_event(struct loader *ld, yaml_node_t *m, const char *p,
		       struct scenario_event *e)
{
	static const char *const keys[] = {"at_s",  "duration_s", "kind",  "value", "slice",
					   "mode",  "sensor",	  "fault", NULL};
	struct scenario *s = ld->s;
	ycfg_check_keys(&ld->y, m, p, keys);
	e->line = (int)m->start_mark.line + 1;
	e->at_s = get_d(ld, m, p, "at_s", true, 0, 365 * DAY_S, 0);
	e->duration_s = get_d(ld, m, p, "duration_s", false, 0, 365 * DAY_S, 0);
	int kind = -1;
	ycfg_enum(&ld->y, m, p, "kind", true, event_kind_names, &kind);
	if (kind < 0)
		return;
	e->kind = (enum event_kind)kind;
	char kp[128];

	/* Keys that only some kinds take. */
	struct {
		const char *key;
		bool allowed;
	} only[] = {
		{"value", kind != EV_METER_LOSS && kind != EV_SENSOR_FAULT},
		{"slice", kind == EV_QUALITY_DRIFT},
		{"mode", kind == EV_QUALITY_DRIFT},
		{"sensor", kind == EV_SENSOR_FAULT || kind == EV_METER_LOSS},
		{"fault", kind == EV_SENSOR_FAULT},
	};
	for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++) {
		yaml_node_t *n = ycfg_get(&ld->y, m, only[i].key);
		bool fault_value = kind == EV_SENSOR_FAULT && strcmp(only[i].key, "value") == 0;
		if (n && !only[i].allowed && !fault_value)
			err(ld, n, ycfg_join(kp, sizeof(kp), p, only[i].key), "not-for-kind",
			    "'%s' does not apply to kind %s", only[i].key, event_kind_names[kind]);
	}

	double min, max;
	const char *unit, *what;
	if (value_range(e->kind, &min, &max, &unit, &what)) {
		yaml_node_t *vn = ycfg_get(&ld->y, m, "value");
		double v;
		ycfg_join(kp, sizeof(kp), p, "value");
		if (!vn)
			err(ld, m, kp, "missing-key", "missing required key 'value' (%s) for kind %s",
			    what, event_kind_names[kind]);
		else if (ycfg_node_double(&ld->y, vn, kp, -INFINITY, INFINITY, &v) == 0) {
			if (v < min || v > max)
				err(ld, vn, kp, "range",
				    "%g is out of range for kind %s; allowed %g..%g%s", v,
				    event_kind_names[kind], min, max, unit);
			else
				e->value = v;
		}
	}

	if (kind == EV_QUALITY_DRIFT) {
		char name[48];
		if (ycfg_string(&ld->y, m, p, "slice", true, name, sizeof(name)) == 0) {
			int si = slice_index(s, name);
			if (si < 0) {
				char names[400] = "";
				for (uint32_t i = 0; i < s->n_slices; i++)
					snprintf(names + strlen(names), sizeof(names) - strlen(names),
						 "%s%s", i ? ", " : "", s->slices[i].name);
				err(ld, ycfg_get(&ld->y, m, "slice"),
				    ycfg_join(kp, sizeof(kp), p, "slice"), "unknown-slice",
				    "unknown slice '%s'; slices: %s", name, names);
			} else {
				e->slice = (uint32_t)si;
			}
		}
		/* Which precision's answers drift: int8 (the default) or fp8. */
		static const char *const modes[] = {"int8", "fp8", NULL};
		int mi = 0;
		if (ycfg_get(&ld->y, m, "mode"))
			ycfg_enum(&ld->y, m, p, "mode", false, modes, &mi);
		e->fp8 = mi == 1;
	}
	if (kind == EV_SENSOR_FAULT || kind == EV_METER_LOSS) {
		int sensor = -1;
		ycfg_enum(&ld->y, m, p, "sensor", true, sensor_names, &sensor);
		if (sensor >= 0) {
			e->sensor = (enum sensor_id)sensor;
			if (kind == EV_METER_LOSS && sensor != SENSOR_POWER_ACCEL &&
			    sensor != SENSOR_POWER_MEMORY && sensor != SENSOR_POWER_HOST)
				err(ld, ycfg_get(&ld->y, m, "sensor"),
				    ycfg_join(kp, sizeof(kp), p, "sensor"), "enum",
				    "meter_loss needs a power sensor; valid: power_accel, "
				    "power_memory, power_host");
		}
	}
	if (kind == EV_SENSOR_FAULT) {
		int fault = -1;
		ycfg_enum(&ld->y, m, p, "fault", true, fault_names, &fault);
		if (fault >= 0)
			e->fault = (enum fault_kind)fault;
		yaml_node_t *vn = ycfg_get(&ld->y, m, "value");
		ycfg_join(kp, sizeof(kp), p, "value");
		if (fault == FAULT_VALUE) {
			/* Any finite reading: implausible ones (-274 C) are the point. */
			if (!vn)
				err(ld, m, kp, "missing-key",
				    "missing required key 'value' (the reading reported) for fault: "
				    "value");
			else
				ycfg_node_double(&ld->y, vn, kp, -INFINITY, INFINITY, &e->value);
		} else if (vn && fault >= 0) {
			err(ld, vn, kp, "not-for-kind", "'value' applies only to fault: value");
		}
	}
}

static int cmp_event(const void *a, const void *b)
{
	const struct scenario_event *x = a, *y = b;
	if (x->at_s != y->at_s)
		return x->at_s < y->at_s ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line); /* stable: file order */
}

static void read_events(struct loader *ld, yaml_node_t *root)
{
	struct scenario *s = ld->s;
	yaml_node_t *seq = ycfg_get(&ld->y, root, "events");
	if (!seq)
		return;
	if (!ycfg_is_seq(&ld->y, seq, "events"))
		return;
	size_t n = ycfg_seq_len(seq);
	if (n > SCENARIO_MAX_EVENTS) {
		err(ld, seq, "events", "range", "%zu events given; at most %d allowed", n,
		    SCENARIO_MAX_EVENTS);
		return;
	}
	if (n == 0)
		return;
	s->events = calloc(n, sizeof(*s->events));
	if (!s->events) {
		err(ld, seq, "events", "memory", "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char p[64];
		ycfg_index(p, sizeof(p), "events", i);
		yaml_node_t *m = ycfg_seq_at(&ld->y, seq, i);
		if (!ycfg_is_map(&ld->y, m, p))
			continue;
		struct scenario_event *e = &s->events[s->n_events++];
		read_event(ld, m, p, e);
		if (e->at_s >= s->duration_s)
			ycfg_warning(&ld->y, ycfg_get(&ld->y, m, "at_s"), p, "after-end",
				     "event at %g s never happens: the scenario ends at %g s", e->at_s,
				     s->duration_s);
	}
	qsort(s->events, s->n_events, sizeof(*s->events), cmp_event);
}

/* --------------------------------------------------------------- top level */

static void basename_noext(const char *path, char *out, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	const char *dot = strrchr(b, '.');
	size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
	snprintf(out, len, "%.*s", (int)n, b);
}

int scenario_load(const char *path, struct scenario **out, struct diag_list *diags)
{
	static const char *const keys[] = {"name",  "description", "preset", "model",
					   "duration_s", "seed", "environment", "server",
					   "workload", "slices", "events", NULL};
	*out = NULL;
	struct loader ld = {0};
	size_t before = diag_count(diags, DIAG_ERROR);
	ld.s = calloc(1, sizeof(*ld.s));
	if (!ld.s)
		return -ENOMEM;
	struct scenario *s = ld.s;
	int rc = ycfg_load_file(&ld.y, path, diags);
	if (rc)
		goto fini_yaml;
	snprintf(s->path, sizeof(s->path), "%s", path);
	yaml_node_t *root = ycfg_root(&ld.y);
	if (!root) {
		ycfg_error(&ld.y, NULL, "", "empty",
			   "empty scenario; expected a mapping with at least 'workload'");
		rc = -EINVAL;
		goto fini_yaml;
	}
	if (!ycfg_is_map(&ld.y, root, "")) {
		rc = -EINVAL;
		goto fini_yaml;
	}
	ycfg_check_keys(&ld.y, root, "", keys);

	basename_noext(path, s->name, sizeof(s->name));
	ycfg_string(&ld.y, root, "", "name", false, s->name, sizeof(s->name));
	struct fsafe_err fe;
	if (!fsafe_name_ok(s->name, sizeof(s->name) - 1, &fe)) {
		/* it names run directories under --out (out/sim/NAME-...) */
		yaml_node_t *nn = ycfg_get(&ld.y, root, "name");
		err(&ld, nn ? nn : root, "name", "range", "scenario name %s%s", fe.msg,
		    nn ? "" : " (the name comes from the file name: set name:)");
	}
	ycfg_string(&ld.y, root, "", "description", false, s->description, sizeof(s->description));

	const char *const *presets = plant_preset_names();
	int pi = -1;
	snprintf(s->preset, sizeof(s->preset), "h200-sxm");
	if (ycfg_get(&ld.y, root, "preset")) {
		if (ycfg_enum(&ld.y, root, "", "preset", false, presets, &pi) == 0)
			snprintf(s->preset, sizeof(s->preset), "%s", presets[pi]);
	}
	const char *const *models = model_spec_names();
	int mi = -1;
	snprintf(s->model, sizeof(s->model), "llama-3.1-8b");
	if (ycfg_get(&ld.y, root, "model")) {
		if (ycfg_enum(&ld.y, root, "", "model", false, models, &mi) == 0)
			snprintf(s->model, sizeof(s->model), "%s", models[mi]);
	}

	s->duration_s = get_d(&ld, root, "", "duration_s", false, 1, 30 * DAY_S, 3600);
	s->default_seed = (uint64_t)get_i(&ld, root, "", "seed", 0, LLONG_MAX, 1);

	read_environment(&ld, root);
	read_server(&ld, root);
	s->server.model = model_spec_find(s->model);
	/* An FP8 engine needs FP8 tensor cores (Ampere has none). */
	const struct plant_preset *dev = plant_preset_find(s->preset);
	if (s->server.fp8_engine && dev && !plant_preset_supports(dev, "fp8")) {
		yaml_node_t *sv = ycfg_get(&ld.y, root, "server");
		err(&ld, sv ? ycfg_get(&ld.y, sv, "fp8_engine") : root, "server.fp8_engine",
		    "not-supported", "preset %s does not run fp8; allowed: false on this preset",
		    s->preset);
	}
	read_workload(&ld, root);
	read_slices(&ld, root);
	s->server.n_slices = s->n_slices;
	s->workload.n_slices = s->n_slices;
	for (uint32_t i = 0; i < s->n_slices; i++)
		s->workload.slice_fraction[i] = s->slices[i].fraction;
	read_events(&ld, root);

	if (diag_count(diags, DIAG_ERROR) > before) {
		rc = -EINVAL;
		goto fini_yaml;
	}
	ycfg_fini(&ld.y);
	*out = s;
	return 0;

fini_yaml:
	ycfg_fini(&ld.y);
	scenario_free(s);
	return rc;
}

void scenario_free(struct scenario *s)
{
	if (!s)
		return;
	free(s->events);
	free(s);
}
