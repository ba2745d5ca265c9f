/* The control loop against a scripted fake device and a virtual clock:
 * actuation only on change, original settings restored, safe point on a
 * telemetry fault, and decision-log records that parse back. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "governor/loop/governor.h"

struct fake {
	uint64_t now_ms;
	double tj_c;
	uint64_t nan_start_ms, nan_end_ms;
	uint32_t power_limit_mw;
	bool locked;
	uint32_t lo_khz, hi_khz;
	double int8[HAL_MAX_SLICES];
	int n_set_clock, n_reset, n_set_power, n_set_prec, n_restore;
	uint32_t orig_power_mw; /* what restore puts back */
	int fail_set_power; /* the next this many power-limit writes fail with -EIO */
	struct hist ttft, tbt, e2e;
	uint64_t tokens, requests;
	uint32_t sv_faults; /* enum hal_serving_fault bits the serving read reports */
	const char *sv_msg;
	double inlet_c;
	uint32_t slow_below_khz; /* locked under this: TTFT 5 s instead of 50 ms */
};

static struct governor_status gstat(const struct governor *g)
{
	struct governor_status s;
	governor_status(g, &s);
	return s;
}

static struct hal_value hv(int64_t v, uint64_t t_ms)
{
	struct hal_value x = { .v = v, .t_ms = t_ms, .valid = true };
	return x;
}

static struct fake *F(struct hal_dev *d)
{
	return d->priv;
}

static int f_limits(struct hal_dev *d, struct hal_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->clk_min_khz = 345000;
	l->clk_max_khz = 1980000;
	l->clk_step_khz = 15000;
	l->clk_default_max_khz = 1980000;
	l->power_limit_min_mw = 200000;
	l->power_limit_max_mw = 700000;
	l->power_limit_default_mw = 700000;
	snprintf(l->model, sizeof(l->model), "fake-h200");
	snprintf(l->driver_version, sizeof(l->driver_version), "0");
	return 0;
}

static int f_sample(struct hal_dev *d, struct hal_sample *s)
{
	struct fake *f = F(d);
	uint64_t t = f->now_ms;
	memset(s, 0, sizeof(*s));
	s->t_ms = t;
	for (int r = 0; r < HAL_RAIL_N; r++) {
		s->power_mw[r] = hv(100000 + 1000 * r + (int64_t)(t % 7000), t);
		s->energy_mj[r] = hv((int64_t)t * 100, t);
	}
	int64_t tj = (int64_t)(f->tj_c * 1000) + (int64_t)(t % 3000);
	s->temp_mc[HAL_TEMP_JUNCTION] = hv(tj, t);
	if (t >= f->nan_start_ms && t < f->nan_end_ms) { /* as the sim backend reports NaN */
		s->temp_mc[HAL_TEMP_JUNCTION].v = HAL_V_NAN;
		s->temp_mc[HAL_TEMP_JUNCTION].nan = true;
	}
	s->temp_mc[HAL_TEMP_MEMORY] = hv(60000 + (int64_t)(t % 5000), t);
	s->temp_mc[HAL_TEMP_INLET] = hv((int64_t)llround(f->inlet_c * 1000), t);
	s->clk_khz = hv(f->locked ? f->hi_khz : 1980000, t);
	s->power_limit_mw = hv(f->power_limit_mw, t);
	s->util_pct = hv(50, t);
	return 0;
}

static int f_set_clock(struct hal_dev *d, uint32_t lo, uint32_t hi)
{
	F(d)->locked = true;
	F(d)->lo_khz = lo;
	F(d)->hi_khz = hi;
	F(d)->n_set_clock++;
	return 0;
}

static int f_reset(struct hal_dev *d)
{
	F(d)->locked = false;
	F(d)->n_reset++;
	return 0;
}

static int f_set_power(struct hal_dev *d, uint32_t mw)
{
	if (F(d)->fail_set_power > 0) {
		F(d)->fail_set_power--;
		return -EIO;
	}
	F(d)->power_limit_mw = mw;
	F(d)->n_set_power++;
	return 0;
}

static int f_serving(struct hal_dev *d, struct hal_serving *o)
{
	struct fake *f = F(d);
	memset(o, 0, sizeof(*o));
	o->t_ms = f->now_ms;
	o->valid = !(f->sv_faults & ~HAL_SVF_RESET);
	o->fault_bits = f->sv_faults;
	o->fault_msg = f->sv_msg;
	o->ttft = &f->ttft;
	o->tbt = &f->tbt;
	o->e2e = &f->e2e;
	o->tokens_generated = f->tokens;
	o->requests_completed = f->requests;
	o->n_slices = 2;
	snprintf(o->slice_name[0], HAL_NAME_LEN, "chat");
	snprintf(o->slice_name[1], HAL_NAME_LEN, "code");
	return 0;
}

static int f_set_prec(struct hal_dev *d, const double *fr, size_t n)
{
	assert_int_equal(n, 2);
	memcpy(F(d)->int8, fr, n * sizeof(*fr));
	F(d)->n_set_prec++;
	return 0;
}

/* The fake owns its originals as a backend does: restore puts back the
 * power limit it had at the start (orig_power_mw), unlocked clocks, BF16,
 * through its own setters (so their counts and injected failures apply). */
static int f_restore(struct hal_dev *d)
{
	int rc = f_reset(d);
	if (!rc)
		rc = f_set_power(d, F(d)->orig_power_mw);
	const double zero[2] = { 0, 0 };
	if (!rc)
		rc = f_set_prec(d, zero, 2);
	F(d)->n_restore++;
	return rc;
}

/* Its record of the originals, as nvml's get_original gives it. */
static int f_get_original(struct hal_dev *d, char *json, size_t len)
{
	int n = snprintf(json, len, "{\"power_limit_mw\":%u}", F(d)->orig_power_mw);
	return n < (int)len ? 0 : -ENOSPC;
}

static const struct hal_ops fake_ops = {
	.name = "fake",
	.get_limits = f_limits,
	.sample = f_sample,
	.set_clock_range = f_set_clock,
	.reset_clocks = f_reset,
	.set_power_limit = f_set_power,
	.read_serving = f_serving,
	.set_precision = f_set_prec,
	.restore = f_restore,
	.get_original = f_get_original,
};

static uint64_t c_now(void *ctx)
{
	return ((struct fake *)ctx)->now_ms;
}

static int c_wait(void *ctx, uint64_t t)
{
	struct fake *f = ctx;
	assert_true(t >= f->now_ms);
	f->now_ms = t;
	bool slow = f->slow_below_khz && f->locked && f->hi_khz < f->slow_below_khz;
	hist_add(&f->ttft, slow ? 5000 : 50, 3);
	f->tokens += 10;
	f->requests += 3;
	return 0;
}

static const struct govd_clock_ops clock_ops = { c_now, c_wait };

struct rig {
	struct fake f;
	struct hal_dev dev;
	struct govd_clock clk;
	struct policy pol;
	struct governor *g;
	char *logbuf;
	size_t loglen;
	FILE *log;
};

static struct rig *rig_new(const char *controller)
{
	struct rig *r = calloc(1, sizeof(*r));
	hist_reset(&r->f.ttft);
	hist_reset(&r->f.tbt);
	hist_reset(&r->f.e2e);
	r->f.tj_c = 60;
	r->f.inlet_c = 25;
	r->f.power_limit_mw = 650000; /* not the default: restore must bring this back */
	r->f.orig_power_mw = 650000;
	r->dev = (struct hal_dev){ .ops = &fake_ops, .priv = &r->f, .name = "fake0" };
	r->clk = (struct govd_clock){ .ops = &clock_ops, .ctx = &r->f };
	policy_defaults(&r->pol);
	snprintf(r->pol.name, sizeof(r->pol.name), "t-%s", controller);
	snprintf(r->pol.hash_hex, sizeof(r->pol.hash_hex), "fnv1a64:0000000000000001");
	snprintf(r->pol.control.controller, sizeof(r->pol.control.controller), "%s", controller);
	r->log = open_memstream(&r->logbuf, &r->loglen);
	return r;
}

static void rig_start_ex(struct rig *r, bool dry_run, struct diag_list *d)
{
	struct governor_cfg cfg = { .pol = &r->pol, .dev = &r->dev, .clock = &r->clk,
				    .declog = r->log, .scenario = "unit", .seed = 7,
				    .dry_run = dry_run };
	assert_int_equal(governor_new(&cfg, &r->g, d), 0);
}

static void rig_start(struct rig *r)
{
	struct diag_list d = { 0 };
	rig_start_ex(r, false, &d);
	diag_clear(&d);
}

/* The log's lines parsed; *n gets the count. Caller frees with lines_free. */
static json_t **lines(struct rig *r, size_t *n)
{
	json_t **v = NULL;
	*n = 0;
	for (char *line = r->logbuf; line && *line;) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		json_error_t err;
		json_t *j = json_loadb(line, (size_t)(nl - line), 0, &err);
		assert_non_null(j);
		v = realloc(v, (*n + 1) * sizeof(*v));
		v[(*n)++] = j;
		line = nl + 1;
	}
	return v;
}

static void lines_free(json_t **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(v[i]);
	free(v);
}

static bool has_reason(json_t *rec, const char *name)
{
	json_t *rs = json_object_get(rec, "reasons");
	for (size_t i = 0; i < json_array_size(rs); i++)
		if (!strcmp(json_string_value(json_array_get(rs, i)), name))
			return true;
	return false;
}

static json_int_t op_int(json_t *rec, const char *which, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(rec, which), key));
}

static void rig_free(struct rig *r)
{
	free(r->logbuf);
	free(r);
}

/* Another writer sets the power limit (nvidia-smi -pl, a BMC cap): seen on
 * the second period it persists, counted, logged with what was found and
 * expected, and govd's own limit written again; a dry run (govd set
 * nothing) and a change that settles within a period are not counted. */
/* The one period record: the decision record points into the period, the
 * counters in it are the governor's as the period ends, and an observer
 * sees the record before the next one is begun. */
struct watch {
	struct rig *r;
	uint64_t periods, oob_seen;
};

static int watch_period(void *ctx, const struct gov_period *p)
{
	struct watch *w = ctx;
	struct governor_status gs = gstat(w->r->g);
	assert_ptr_equal(p->rec.after, &p->after);
	assert_ptr_equal(p->rec.before, &p->before);
	assert_ptr_equal(p->rec.est, p->est);
	assert_ptr_equal(p->rec.faults, p->faults);
	assert_ptr_equal(p->est, governor_estimates(w->r->g));
	assert_int_equal(p->rec.reasons, p->reasons);
	assert_int_equal(p->rec.binding, p->binding);
	assert_int_equal(p->rec.seq, w->periods);
	assert_int_equal(gs.periods, w->periods); /* counted after the observers */
	assert_int_equal(p->counters.oob_changes, gs.oob_changes);
	assert_int_equal(p->counters.actuate_errors, gs.actuate_errors);
	assert_int_equal(p->counters.rollbacks, gs.rollbacks);
	assert_int_equal(p->counters.fault_onsets, gs.fault_onsets);
	assert_true(gov_opoint_equal(&p->after, governor_point(w->r->g)));
	if (p->rec.oob_found_mw) {
		w->oob_seen++;
		assert_int_equal(p->counters.oob_changes, w->oob_seen);
		assert_int_equal(p->before.power_limit_mw, p->rec.oob_found_mw);
	}
	w->periods++;
	return 0;
}

static void test_period_record(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	struct watch w = { .r = r };
	struct governor_cfg cfg = { .pol = &r->pol, .dev = &r->dev, .clock = &r->clk,
				    .declog = r->log, .scenario = "unit", .seed = 7,
				    .on_period = watch_period, .cb_ctx = &w };
	assert_int_equal(governor_new(&cfg, &r->g, NULL), 0);
	assert_int_equal(governor_run(r->g, 1000), 0);
	r->f.power_limit_mw = 400000; /* another writer, two periods: found once */
	for (int i = 0; i < 3; i++)
		assert_int_equal(governor_tick(r->g), 0);
	assert_int_equal(w.oob_seen, 1);
	assert_int_equal(gstat(r->g).periods, w.periods);
	assert_true(w.periods > 3);
	governor_free(r->g);
	fclose(r->log);
	rig_free(r);
}

static void test_out_of_band_power_limit(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	rig_start(r);
	assert_int_equal(governor_run(r->g, 1000), 0);
	assert_int_equal(r->f.power_limit_mw, 700000); /* static's default, written */
	int writes = r->f.n_set_power;
	/* one period only: a write settling, not counted */
	r->f.power_limit_mw = 400000;
	assert_int_equal(governor_tick(r->g), 0);
	r->f.power_limit_mw = 700000;
	assert_int_equal(governor_tick(r->g), 0);
	assert_int_equal(gstat(r->g).oob_changes, 0);
	/* persistent: the second period finds it and writes 700 W again */
	r->f.power_limit_mw = 400000;
	assert_int_equal(governor_tick(r->g), 0);
	assert_int_equal(gstat(r->g).oob_changes, 0);
	assert_int_equal(governor_tick(r->g), 0);
	assert_int_equal(gstat(r->g).oob_changes, 1);
	assert_int_equal(r->f.power_limit_mw, 700000);
	assert_int_equal(r->f.n_set_power, writes + 1);
	/* 1 W off is the device's rounding, not another writer */
	r->f.power_limit_mw = 700800;
	for (int i = 0; i < 4; i++)
		assert_int_equal(governor_tick(r->g), 0);
	assert_int_equal(gstat(r->g).oob_changes, 1);
	fflush(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	int logged = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object_get(v[i], "out_of_band");
		if (!o)
			continue;
		logged++;
		assert_int_equal(json_integer_value(json_object_get(o, "found_mw")), 400000);
		assert_int_equal(json_integer_value(json_object_get(o, "expected_mw")), 700000);
		assert_int_equal(op_int(v[i], "before", "power_limit_mw"), 400000);
		assert_int_equal(op_int(v[i], "after", "power_limit_mw"), 700000);
	}
	assert_int_equal(logged, 1);
	lines_free(v, n);
	governor_free(r->g);
	fclose(r->log);
	rig_free(r);

	/* dry run: nothing was set, nothing is out of band */
	r = rig_new("static");
	struct diag_list d = { 0 };
	rig_start_ex(r, true, &d);
	diag_clear(&d);
	assert_int_equal(governor_run(r->g, 1000), 0);
	r->f.power_limit_mw = 400000;
	for (int i = 0; i < 4; i++)
		assert_int_equal(governor_tick(r->g), 0);
	assert_int_equal(gstat(r->g).oob_changes, 0);
	governor_free(r->g);
	fclose(r->log);
	rig_free(r);
}

/* A restore whose write fails is not marked done: the next call (the
 * daemon's shutdown, governor_fini) tries again and brings the original back. */
static void test_failed_restore_is_retried(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	r->pol.frequency.min_mhz = 900;
	r->pol.frequency.max_mhz = 1410;
	rig_start(r);
	assert_int_equal(governor_run(r->g, 2000), 0);
	assert_int_equal(r->f.power_limit_mw, 700000); /* static's default */
	r->f.fail_set_power = 1;
	assert_int_equal(governor_restore(r->g), -EIO);
	assert_int_equal(r->f.power_limit_mw, 700000); /* not back yet */
	assert_int_equal(governor_restore(r->g), 0);
	assert_int_equal(r->f.power_limit_mw, 650000);
	int n = r->f.n_set_power;
	assert_int_equal(governor_restore(r->g), 0); /* done: nothing more written */
	assert_int_equal(r->f.n_set_power, n);
	governor_free(r->g);
	fclose(r->log);
	free(r->logbuf);
	free(r);
}

static void test_static_actuates_once_and_restores(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	r->pol.frequency.min_mhz = 900;
	r->pol.frequency.max_mhz = 1410;
	r->pol.precision.int8_fraction = 0.5;
	rig_start(r);
	assert_int_equal(governor_run(r->g, 10000), 0);
	assert_int_equal(gstat(r->g).periods, 20);
	assert_int_equal(r->f.n_set_clock, 1);
	assert_int_equal(r->f.n_set_prec, 1);
	assert_int_equal(r->f.n_set_power, 1); /* 650 W in force -> static's default 700 W */
	assert_int_equal(r->f.lo_khz, 900000);
	assert_true(r->f.int8[0] == 0.5 && r->f.int8[1] == 0.5);
	governor_free(r->g);
	assert_false(r->f.locked);
	assert_int_equal(r->f.n_reset, 1);
	assert_int_equal(r->f.power_limit_mw, 650000);
	assert_true(r->f.int8[0] == 0 && r->f.int8[1] == 0);
	fclose(r->log);

	/* header, 20 decisions, restore; each line parses */
	char *line = r->logbuf;
	int n = 0;
	json_t *first = NULL, *last = NULL;
	while (line && *line) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		json_error_t err;
		json_t *j = json_loadb(line, (size_t)(nl - line), 0, &err);
		assert_non_null(j);
		if (n == 0)
			first = j;
		else if (last != first)
			json_decref(last);
		last = j;
		if (n == 1) {
			assert_string_equal(json_string_value(json_object_get(j, "type")), "decision");
			assert_int_equal(json_integer_value(json_object_get(j, "t_ms")), 0);
			json_t *rs = json_object_get(j, "reasons");
			assert_string_equal(json_string_value(json_array_get(rs, 0)), "init");
			assert_string_equal(json_string_value(json_array_get(rs, 1)), "static");
			assert_string_equal(json_string_value(json_object_get(j, "binding")), "policy");
			json_t *after = json_object_get(j, "after");
			assert_int_equal(json_integer_value(json_object_get(after, "clk_max_khz")), 1410000);
			assert_true(json_is_true(json_object_get(after, "clk_locked")));
			json_t *before = json_object_get(j, "before");
			assert_int_equal(json_integer_value(json_object_get(before, "power_limit_mw")),
					 650000);
			assert_string_equal(json_string_value(json_object_get(j, "policy_hash")),
					    "fnv1a64:0000000000000001");
			assert_int_equal(json_integer_value(json_object_get(j, "seed")), 7);
			json_t *in = json_object_get(j, "inputs");
			assert_true(json_is_real(json_object_get(json_object_get(in, "temp_c"), "junction")));
		}
		if (n == 2) {
			/* the static point lowered the clock cap: canaried from here */
			json_t *rs = json_object_get(j, "reasons");
			assert_int_equal(json_array_size(rs), 2);
			assert_string_equal(json_string_value(json_array_get(rs, 1)), "canary");
			assert_string_equal(json_string_value(json_object_get(j, "rollback")
							      ? json_object_get(json_object_get(j, "rollback"), "state")
							      : NULL), "canary");
			assert_int_equal(json_integer_value(json_object_get(j, "t_ms")), 500);
		}
		line = nl + 1;
		n++;
	}
	assert_int_equal(n, 22);
	assert_string_equal(json_string_value(json_object_get(first, "type")), "header");
	assert_string_equal(json_string_value(json_object_get(first, "scenario")), "unit");
	assert_string_equal(json_string_value(json_object_get(first, "controller")), "static");
	assert_string_equal(json_string_value(json_object_get(json_object_get(first, "device"), "model")),
			    "fake-h200");
	assert_string_equal(json_string_value(json_array_get(json_object_get(first, "slices"), 1)),
			    "code");
	assert_string_equal(json_string_value(json_object_get(last, "type")), "restore");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(last, "after"),
							    "power_limit_mw")), 650000);
	json_decref(first);
	json_decref(last);
	rig_free(r);
}

static void test_fault_goes_to_safe_point(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	r->pol.safe_point.clk_max_mhz = 1005;
	r->pol.safe_point.power_cap_w = 400;
	r->pol.safe_point.hold_periods = 2;
	r->f.nan_start_ms = 2000;
	r->f.nan_end_ms = 3000; /* periods at 2000 and 2500 see NaN */
	rig_start(r);
	assert_int_equal(governor_run(r->g, 2000), 0);
	assert_false(r->f.locked);
	assert_int_equal(r->f.power_limit_mw, 700000);
	assert_int_equal(governor_run(r->g, 2500), 0);
	assert_true(r->f.locked);
	assert_int_equal(r->f.hi_khz, 1005000);
	assert_int_equal(r->f.power_limit_mw, 400000);
	assert_int_equal(governor_faults(r->g)[GOV_SIG_TEMP_JUNCTION], GOV_FAULT_NAN);
	/* the validator's count reaches the estimates */
	assert_int_equal(governor_estimates(r->g)->n_faults, 1);
	assert_true(governor_estimates(r->g)->critical_fault);
	/* NaN at 2500; clean 3000, 3500 held; 4000 back to firmware default */
	assert_int_equal(governor_run(r->g, 4000), 0);
	assert_true(r->f.locked);
	assert_int_equal(governor_run(r->g, 4500), 0);
	assert_false(r->f.locked);
	assert_int_equal(r->f.power_limit_mw, 700000);
	assert_int_equal(gstat(r->g).fault_onsets, 1);
	assert_int_equal(governor_estimates(r->g)->n_faults, 0);
	governor_free(r->g);
	assert_int_equal(r->f.power_limit_mw, 650000);
	fclose(r->log);
	assert_non_null(strstr(r->logbuf, "{\"signal\":\"temp_junction\",\"fault\":\"nan\"}"));
	assert_non_null(strstr(r->logbuf, "\"reasons\":[\"firmware_default\",\"safe_point\"]"));
	assert_non_null(strstr(r->logbuf, "\"safe_hold\""));
	assert_null(strstr(r->logbuf, "NaN"));
	rig_free(r);
}

/* Serving faults reach the decision log, only in the periods that had them. */
static void test_serving_faults_logged(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	rig_start(r);
	assert_int_equal(governor_run(r->g, 1000), 0); /* periods 0, 500: clean */
	r->f.sv_faults = HAL_SVF_CONNECT | HAL_SVF_TIMEOUT;
	r->f.sv_msg = "connect to 127.0.0.1:8000: refused";
	assert_int_equal(governor_run(r->g, 1500), 0); /* period 1000 */
	r->f.sv_faults = 0;
	r->f.sv_msg = NULL;
	assert_int_equal(governor_run(r->g, 2000), 0); /* period 1500: clean */
	governor_free(r->g);
	fclose(r->log);

	int n = 0, with = 0;
	for (char *line = r->logbuf; line && *line; n++) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		json_error_t err;
		json_t *j = json_loadb(line, (size_t)(nl - line), 0, &err);
		assert_non_null(j);
		json_t *sf = json_object_get(j, "serving_faults");
		if (sf) {
			with++;
			assert_int_equal(json_integer_value(json_object_get(j, "t_ms")), 1000);
			json_t *names = json_object_get(sf, "faults");
			assert_int_equal(json_array_size(names), 2);
			assert_string_equal(json_string_value(json_array_get(names, 0)), "connect");
			assert_string_equal(json_string_value(json_array_get(names, 1)), "timeout");
			assert_string_equal(json_string_value(json_object_get(sf, "msg")),
					    "connect to 127.0.0.1:8000: refused");
		}
		assert_null(json_object_get(j, "quality_faults"));
		json_decref(j);
		line = nl + 1;
	}
	assert_int_equal(n, 6); /* header, 4 decisions, restore */
	assert_int_equal(with, 1);
	rig_free(r);
}

/* The governor's restore is the backend's, once, and its record shows the
 * backend's original power limit (after a crash-adopt, not the governed one
 * the first sample saw: here 640 W against 650 W). A device that writes
 * without a restore is refused. */
static void test_backend_owns_restore(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	r->f.orig_power_mw = 640000;
	r->pol.frequency.min_mhz = 900;
	r->pol.frequency.max_mhz = 1410;
	r->pol.precision.int8_fraction = 0.5;
	rig_start(r);
	assert_int_equal(governor_run(r->g, 3000), 0);
	governor_free(r->g);
	assert_int_equal(r->f.n_restore, 1);
	assert_int_equal(r->f.power_limit_mw, 640000);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	json_t *last = v[n - 1];
	assert_string_equal(json_string_value(json_object_get(last, "type")), "restore");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(last, "after"),
							    "power_limit_mw")), 640000);
	lines_free(v, n);
	rig_free(r);

	r = rig_new("static");
	static struct hal_ops no_restore;
	no_restore = fake_ops;
	no_restore.restore = NULL;
	r->dev.ops = &no_restore;
	struct diag_list d = { 0 };
	struct governor_cfg cfg = { .pol = &r->pol, .dev = &r->dev, .clock = &r->clk,
				    .declog = r->log };
	assert_int_equal(governor_new(&cfg, &r->g, &d), -EINVAL);
	assert_int_equal(diag_count(&d, DIAG_ERROR), 1);
	assert_string_equal(d.v[0].code, "no-restore");
	diag_clear(&d);
	fclose(r->log);
	rig_free(r);
}

/* Observe mode: decisions logged as if applied, nothing written, cur is
 * what the device runs. */
static void test_dry_run(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	r->pol.frequency.min_mhz = 900;
	r->pol.frequency.max_mhz = 1410;
	r->pol.precision.int8_fraction = 0.5;
	struct diag_list d = { 0 };
	rig_start_ex(r, true, &d);
	diag_clear(&d);
	assert_int_equal(governor_run(r->g, 3000), 0);
	assert_int_equal(r->f.n_set_clock + r->f.n_reset + r->f.n_set_power + r->f.n_set_prec, 0);
	assert_false(governor_point(r->g)->clk_locked);
	assert_int_equal(governor_point(r->g)->power_limit_mw, 650000);
	governor_free(r->g);
	assert_int_equal(r->f.n_set_clock + r->f.n_reset + r->f.n_set_power + r->f.n_set_prec, 0);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	assert_int_equal(n, 8); /* header, 6 decisions, restore */
	assert_true(json_is_true(json_object_get(v[0], "dry_run")));
	for (size_t i = 1; i < 7; i++) {
		assert_int_equal(op_int(v[i], "after", "clk_max_khz"), 1410000);
		assert_false(json_is_true(json_object_get(json_object_get(v[i], "before"), "clk_locked")));
		assert_int_equal(op_int(v[i], "before", "power_limit_mw"), 650000);
	}
	lines_free(v, n);
	rig_free(r);
}

/* The node budget caps the power limit on top of the policy. */
static void test_power_budget(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	rig_start(r);
	assert_int_equal(governor_run(r->g, 1000), 0);
	assert_int_equal(r->f.power_limit_mw, 700000);
	assert_int_equal(governor_set_power_budget_mw(r->g, 450000), 0);
	assert_int_equal(governor_run(r->g, 2000), 0);
	assert_int_equal(r->f.power_limit_mw, 450000);
	assert_int_equal(governor_set_power_budget_mw(r->g, 50000), 0); /* under the device min */
	assert_int_equal(governor_run(r->g, 3000), 0);
	assert_int_equal(r->f.power_limit_mw, 200000);
	/* a budget of 0 W holds the device minimum: zero never means unlimited */
	assert_int_equal(governor_set_power_budget_mw(r->g, 0), 0);
	assert_int_equal(governor_run(r->g, 3500), 0);
	assert_int_equal(r->f.power_limit_mw, 200000);
	governor_clear_power_budget(r->g);
	assert_int_equal(governor_run(r->g, 4000), 0);
	assert_int_equal(r->f.power_limit_mw, 700000);
	governor_free(r->g);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	assert_int_equal(n, 10);
	assert_true(json_is_null(json_object_get(v[1], "power_budget_mw")));
	assert_int_equal(json_integer_value(json_object_get(v[3], "power_budget_mw")), 450000);
	assert_true(has_reason(v[3], "clamp_power_cap"));
	assert_string_equal(json_string_value(json_object_get(v[3], "binding")), "power_cap");
	assert_int_equal(op_int(v[3], "after", "power_limit_mw"), 450000);
	/* the zero budget is logged as 0, not as "none" */
	assert_true(json_is_integer(json_object_get(v[7], "power_budget_mw")));
	assert_int_equal(json_integer_value(json_object_get(v[7], "power_budget_mw")), 0);
	assert_true(json_is_null(json_object_get(v[8], "power_budget_mw")));
	lines_free(v, n);
	rig_free(r);
}

/* Operator hold keeps the op point; the safe point still wins. */
static void test_operator_hold(void **state)
{
	(void)state;
	struct rig *r = rig_new("static");
	r->pol.frequency.min_mhz = 900;
	r->pol.frequency.max_mhz = 1410;
	r->pol.safe_point.clk_max_mhz = 1005;
	r->pol.safe_point.hold_periods = 0;
	rig_start(r);
	assert_int_equal(governor_run(r->g, 500), 0);
	assert_int_equal(r->f.hi_khz, 1410000);
	governor_hold(r->g, true);
	r->pol.frequency.max_mhz = 1200; /* static's wish moves; the hold must not follow */
	assert_int_equal(governor_run(r->g, 2000), 0);
	assert_int_equal(r->f.hi_khz, 1410000);
	assert_int_equal(r->f.n_set_clock, 1);
	r->f.nan_start_ms = 2000;
	r->f.nan_end_ms = 2500;
	assert_int_equal(governor_run(r->g, 2500), 0);
	assert_int_equal(r->f.hi_khz, 1005000); /* fault: safe point despite the hold */
	assert_int_equal(governor_run(r->g, 3000), 0);
	assert_int_equal(r->f.hi_khz, 1005000); /* held where it is */
	governor_hold(r->g, false);
	assert_int_equal(governor_run(r->g, 3500), 0);
	assert_int_equal(r->f.hi_khz, 1200000);
	governor_free(r->g);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	assert_false(json_is_true(json_object_get(v[1], "operator_hold")));
	assert_true(json_is_true(json_object_get(v[2], "operator_hold")));
	assert_true(json_is_true(json_object_get(v[5], "operator_hold")));
	assert_true(has_reason(v[5], "safe_point"));
	assert_true(json_is_true(json_object_get(v[6], "operator_hold")));
	assert_false(json_is_true(json_object_get(v[7], "operator_hold")));
	assert_int_equal(n, 9);
	lines_free(v, n);
	rig_free(r);
}

/* The GPIO alert path: safe point now, logged, then held like a fault. */
static void test_emergency(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	r->pol.safe_point.clk_max_mhz = 1005;
	r->pol.safe_point.power_cap_w = 400;
	r->pol.safe_point.hold_periods = 2;
	rig_start(r);
	assert_int_equal(governor_run(r->g, 1000), 0);
	assert_false(r->f.locked);
	r->f.now_ms = 1200; /* between periods */
	assert_int_equal(governor_emergency(r->g, "gpio thermal alert"), 0);
	assert_true(r->f.locked);
	assert_int_equal(r->f.hi_khz, 1005000);
	assert_int_equal(r->f.power_limit_mw, 400000);
	assert_true(governor_point(r->g)->clk_locked);
	assert_int_equal(gstat(r->g).emergencies, 1);
	/* log written and flushed before the next period */
	assert_non_null(strstr(r->logbuf, "\"emergency\":\"gpio thermal alert\""));
	assert_int_equal(governor_run(r->g, 2000), 0); /* 1200, 1700: held */
	assert_true(r->f.locked);
	assert_int_equal(governor_run(r->g, 2500), 0); /* 2200: back to the controller */
	assert_false(r->f.locked);
	governor_free(r->g);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	json_t *e = v[3];
	assert_int_equal(json_integer_value(json_object_get(e, "t_ms")), 1200);
	assert_int_equal(json_integer_value(json_object_get(e, "seq")), 2);
	assert_true(has_reason(e, "safe_point"));
	assert_string_equal(json_string_value(json_object_get(e, "binding")), "safe_point");
	assert_int_equal(op_int(e, "after", "clk_max_khz"), 1005000);
	assert_false(json_is_true(json_object_get(json_object_get(e, "before"), "clk_locked")));
	assert_true(has_reason(v[4], "safe_hold"));
	assert_true(has_reason(v[5], "safe_hold"));
	assert_false(has_reason(v[6], "safe_hold"));
	assert_null(json_object_get(v[4], "emergency"));
	lines_free(v, n);
	rig_free(r);
}

/* Outside the inlet range: safe point with the why in the log; back in
 * only 1 C inside the edge. */
static void test_envelope_inlet(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	r->pol.envelope.inlet_max_c = 30;
	r->pol.safe_point.clk_max_mhz = 1005;
	struct diag_list d = { 0 };
	rig_start_ex(r, false, &d);
	assert_int_equal(diag_count(&d, DIAG_WARNING), 0);
	diag_clear(&d);
	assert_int_equal(governor_run(r->g, 1000), 0);
	assert_false(r->f.locked);
	r->f.inlet_c = 31;
	assert_int_equal(governor_run(r->g, 1500), 0);
	assert_true(r->f.locked);
	assert_int_equal(r->f.hi_khz, 1005000);
	r->f.inlet_c = 29.5; /* inside, but within the hysteresis */
	assert_int_equal(governor_run(r->g, 2000), 0);
	assert_true(r->f.locked);
	r->f.inlet_c = 28.5;
	assert_int_equal(governor_run(r->g, 2500), 0);
	assert_false(r->f.locked);
	governor_free(r->g);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	assert_true(json_is_null(json_object_get(v[1], "envelope")));
	assert_true(has_reason(v[3], "envelope"));
	assert_string_equal(json_string_value(json_object_get(v[3], "binding")), "envelope");
	assert_non_null(strstr(json_string_value(json_object_get(v[3], "envelope")),
			       "inlet 31.0 C outside"));
	assert_non_null(strstr(json_string_value(json_object_get(v[4], "envelope")), "edge"));
	assert_true(json_is_null(json_object_get(v[5], "envelope")));
	assert_false(has_reason(v[5], "envelope"));
	lines_free(v, n);
	rig_free(r);
}

/* A device the policy was not validated on: warned at init, safe point
 * every period. */
static void test_envelope_device(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	r->pol.envelope.clk_max_mhz = 2100; /* the fake reaches 1980 */
	r->pol.safe_point.power_cap_w = 300;
	struct diag_list d = { 0 };
	rig_start_ex(r, false, &d);
	assert_int_equal(diag_count(&d, DIAG_WARNING), 1);
	char buf[512];
	diag_format(&d.v[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "clock maximum"));
	diag_clear(&d);
	assert_int_equal(governor_run(r->g, 2000), 0);
	assert_int_equal(r->f.power_limit_mw, 300000);
	assert_int_equal(r->f.n_set_power, 1);
	governor_free(r->g);
	fclose(r->log);
	rig_free(r);
}

/* kill -9 safety: each record is flushed as it is written. */
static void test_flushed_per_line(void **state)
{
	(void)state;
	struct rig *r = rig_new("firmware-default");
	rig_start(r);
	assert_int_equal(r->loglen > 0 && r->logbuf[r->loglen - 1] == '\n', 1);
	assert_int_equal(governor_tick(r->g), 0);
	size_t nl = 0;
	for (size_t i = 0; i < r->loglen; i++)
		nl += r->logbuf[i] == '\n';
	assert_int_equal(nl, 2);
	assert_int_equal(r->logbuf[r->loglen - 1], '\n');
	governor_free(r->g);
	fclose(r->log);
	rig_free(r);
}

/* Closed loop: ondemand at 50 % busy walks the clock down to where TTFT
 * blows the SLA; the canary rolls it back to the fallback, holds, recovers,
 * and the repeat is held twice as long. */
static void test_bad_step_rolled_back(void **state)
{
	(void)state;
	struct rig *r = rig_new("ondemand");
	r->f.slow_below_khz = 1400000;
	r->pol.sla.window_s = 10;
	r->pol.sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 1000;
	r->pol.rollback.sla_violated_windows = 2;
	r->pol.rollback.sla_of_windows = 3;
	r->pol.rollback.canary_s = 60;
	r->pol.rollback.hold_s = 30;
	r->pol.rollback.backoff_factor = 2;
	r->pol.rollback.max_hold_s = 600;
	rig_start(r);
	assert_int_equal(governor_run(r->g, 25000), 0);
	assert_int_equal(gstat(r->g).rollbacks, 1);
	assert_int_equal(gstat(r->g).rb_state, RB_HOLD);
	assert_false(r->f.locked); /* fallback: the default safe point, clocks unlocked */
	assert_int_equal(governor_run(r->g, 120000), 0);
	assert_int_equal(gstat(r->g).rollbacks, 2);
	assert_int_equal(gstat(r->g).recoveries, 1);
	governor_free(r->g);
	fclose(r->log);
	size_t n;
	json_t **v = lines(r, &n);
	int fired = 0, recover = 0;
	json_int_t t_fire[2] = { 0, 0 }, t_recover = 0;
	for (size_t i = 1; i + 1 < n; i++) {
		json_t *f = json_object_get(v[i], "fired");
		json_t *rb = json_object_get(v[i], "rollback");
		if (json_is_string(f)) {
			assert_string_equal(json_string_value(f), "sla");
			assert_true(has_reason(v[i], "rollback"));
			assert_string_equal(json_string_value(json_object_get(v[i], "binding")), "rollback");
			assert_string_equal(json_string_value(json_object_get(rb, "state")), "hold");
			assert_int_equal(json_array_size(json_object_get(v[i], "armed")), 4);
			assert_false(json_is_true(json_object_get(json_object_get(v[i], "after"),
								  "clk_locked")));
			t_fire[fired++] = json_integer_value(json_object_get(v[i], "t_ms"));
		}
		if (has_reason(v[i], "rollback_recover")) {
			recover++;
			t_recover = json_integer_value(json_object_get(v[i], "t_ms"));
		}
		if (has_reason(v[i], "rollback_hold"))
			assert_true(json_real_value(json_object_get(rb, "hold_left_s")) > 0);
	}
	assert_int_equal(fired, 2);
	assert_int_equal(recover, 1);
	assert_int_equal(t_recover - t_fire[0], 30000);
	json_t *last = v[n - 2];
	assert_true(fabs(json_real_value(json_object_get(json_object_get(last, "rollback"),
							 "hold_left_s")) -
			 (60.0 - (double)(json_integer_value(json_object_get(last, "t_ms")) - t_fire[1]) /
					 1000.0)) < 1e-9);
	lines_free(v, n);
	rig_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_actuates_once_and_restores),
		cmocka_unit_test(test_failed_restore_is_retried),
		cmocka_unit_test(test_out_of_band_power_limit),
		cmocka_unit_test(test_period_record),
		cmocka_unit_test(test_fault_goes_to_safe_point),
		cmocka_unit_test(test_serving_faults_logged),
		cmocka_unit_test(test_backend_owns_restore),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test(test_power_budget),
		cmocka_unit_test(test_operator_hold),
		cmocka_unit_test(test_emergency),
		cmocka_unit_test(test_envelope_inlet),
		cmocka_unit_test(test_envelope_device),
		cmocka_unit_test(test_flushed_per_line),
		cmocka_unit_test(test_bad_step_rolled_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
