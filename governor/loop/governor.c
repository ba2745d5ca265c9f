#include "governor/loop/governor.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "governor/loop/stage.h"

enum { STAGE_READ, STAGE_VALIDATE, STAGE_ESTIMATE, STAGE_DECIDE, STAGE_ROLLBACK, STAGE_GUARD,
       STAGE_ACTUATE, STAGE_N };

struct governor {
	struct governor_cfg cfg;
	struct hal_limits lim;
	struct policy_slices slices; /* the serving side's, with the policy's rules */
	/* The stages' state; stage[] runs them in order. */
	struct validator val;
	struct estimator est;
	struct gov_decider dec;
	struct rollback rb;
	struct gov_guard_stage guard;
	struct {
		const struct gov_stage_ops *ops;
		void *state;
	} stage[STAGE_N];
	bool stages_up;
	struct declog log;
	struct gov_period period; /* the last one */
	/* read and actuate: the device */
	struct gov_opoint cur;   /* in force */
	bool started;            /* first period done (cur adopted from the device) */
	bool wrote;              /* a HAL write happened: restore needed */
	bool restored;
	uint32_t orig_power_limit_mw;
	uint64_t seq;
	uint64_t actuate_errors;
	/* Out-of-band power-limit changes: the device reported a limit govd did
	 * not set on two periods in a row (nvidia-smi -pl, a BMC cap); counted,
	 * logged, and govd's own decision is applied again. */
	uint64_t oob_changes;
	unsigned oob_streak;
	uint32_t oob_found_mw, oob_expected_mw; /* the last one, for the log */
	uint64_t emergencies;
	bool safety;             /* the last applied point was forced by safety (not canaried) */
	bool operator_hold;      /* governor_hold */
	struct hal_sample sample;
	struct hal_serving serving;
	struct hal_quality quality;
};

static const struct gov_stage_ops stage_read, stage_actuate;

static void warn_missing(struct diag_list *diags, const struct hal_dev *dev, const char *what)
{
	if (diags)
		diag_add(diags, DIAG_WARNING, dev->name, 0, 0, "", "capability",
			 "device does not offer %s; the governor will not change it", what);
}

/* The serving side's slices, and the policy's rule for each (resolved once:
 * every stage reads these). None where the device cannot steer precision. */
static void init_slices(struct governor *g, struct hal_dev *dev, const struct policy *pol)
{
	size_t n = 0;
	if (hal_can_read_serving(dev) && dev->ops->read_serving(dev, &g->serving) == 0)
		n = g->serving.n_slices;
	if (!hal_can_set_precision(dev))
		n = 0; /* nothing to steer; op points carry no slices */
	policy_slices_resolve(pol, (const char(*)[HAL_NAME_LEN])g->serving.slice_name, n, &g->slices);
}

/* The decision log's header: the run, the policy, the device and slices. */
static int init_log(struct governor *g, const struct governor_cfg *cfg)
{
	const struct policy *pol = cfg->pol;
	declog_init(&g->log, cfg->declog);
	declog_set_compact(&g->log, cfg->declog_heartbeat_ms);
	struct declog_header h = {
		.scenario = cfg->scenario,
		.scenario_path = cfg->scenario_path,
		.command = cfg->command,
		.policy_name = pol->name,
		.policy_path = pol->path,
		.policy_hash = pol->hash_hex,
		.controller = g->dec.ctl->name,
		.period_ms = pol->control.period_ms,
		.seed = cfg->seed,
		.lim = &g->lim,
		.device_name = cfg->dev->name,
		.n_slices = g->slices.n,
		.slice_name = (const char(*)[HAL_NAME_LEN])g->slices.name,
		.dry_run = cfg->dry_run || cfg->dry_run_device,
		.workload_profile = pol->metadata.workload_profile,
		.model_revision = pol->metadata.model_revision,
		.power_mode = pol->metadata.power_mode,
	};
	return declog_header(&g->log, &h);
}

static void fini_stages(struct governor *g, size_t n)
{
	while (n--)
		if (g->stage[n].ops->fini)
			g->stage[n].ops->fini(g->stage[n].state);
}

/* Every stage's init(pol, lim, slices), in order; on a failure the ones
 * before are undone. */
static int init_stages(struct governor *g, const struct policy *pol, struct diag_list *diags)
{
	void *state[STAGE_N] = { g, &g->val, &g->est, &g->dec, &g->rb, &g->guard, g };
	const struct gov_stage_ops *ops[STAGE_N] = {
		&stage_read, &gov_stage_validate, &gov_stage_estimate, &gov_stage_decide,
		&gov_stage_rollback, &gov_stage_guard, &stage_actuate,
	};
	for (size_t i = 0; i < STAGE_N; i++) {
		g->stage[i].ops = ops[i];
		g->stage[i].state = state[i];
		int rc = ops[i]->init ? ops[i]->init(state[i], pol, &g->lim, &g->slices) : 0;
		if (!rc)
			continue;
		if (i == STAGE_DECIDE)
			diag_add(diags, DIAG_ERROR, pol->path, 0, 0, "control.params", "controller-init",
				 "controller %s rejected its parameters: %s", g->dec.ctl->name,
				 strerror(-rc));
		fini_stages(g, i);
		return rc;
	}
	g->stages_up = true;
	return 0;
}

/* The device's capabilities against what the policy asks: a device that
 * writes must restore; one with nothing to write is observed. */
static int check_device(struct governor *g, const struct governor_cfg *cfg,
			struct diag_list *diags)
{
	const struct controller_ops *ctl = controller_find(cfg->pol->control.controller);
	assert(ctl);
	if (!ctl)
		return -ENOENT;
	if (!cfg->dev || !cfg->dev->ops || !cfg->clock)
		return -EINVAL;
	if ((hal_can_set_clocks(cfg->dev) || hal_can_set_power_limit(cfg->dev) ||
	     hal_can_set_precision(cfg->dev)) && !hal_can_restore(cfg->dev)) {
		diag_add(diags, DIAG_ERROR, cfg->dev->name, 0, 0, "", "no-restore",
			 "backend %s can write but cannot restore: refusing to govern it",
			 cfg->dev->ops->name);
		return -EINVAL;
	}
	int rc = cfg->dev->ops->get_limits(cfg->dev, &g->lim);
	if (rc) {
		diag_add(diags, DIAG_ERROR, cfg->dev->name, 0, 0, "", "limits",
			 "cannot read device limits: %s", strerror(-rc));
		return rc;
	}
	/* An FP8 rung the device cannot select would serve INT8 behind FP8's
	 * gate: refused, not degraded. */
	if ((cfg->pol->precision.modes & POLICY_PREC_BIT(POLICY_PREC_FP8)) &&
	    hal_can_set_precision(cfg->dev) && !hal_can_set_low_mode(cfg->dev)) {
		diag_add(diags, DIAG_ERROR, cfg->dev->name, 0, 0, "precision.modes", "no-fp8",
			 "fp8 is in precision.modes but backend %s cannot select a slice's 8-bit "
			 "mode (FP8 or INT8); allowed: modes without fp8 on this device",
			 cfg->dev->ops->name);
		return -EOPNOTSUPP;
	}
	if (!hal_can_set_clocks(cfg->dev))
		warn_missing(diags, cfg->dev, "clock locking");
	if (!hal_can_set_power_limit(cfg->dev))
		warn_missing(diags, cfg->dev, "a power limit");
	/* A device with nothing to write (alert and brake lines, a meter) is
	 * observed: a governing controller needs a clock or power range to work
	 * in and refuses a device without one, which would stop the daemon. */
	if (!hal_can_set_clocks(cfg->dev) && !hal_can_set_power_limit(cfg->dev) &&
	    !hal_can_set_precision(cfg->dev) && strcmp(ctl->name, "firmware-default")) {
		const struct controller_ops *obs = controller_find("firmware-default");
		assert(obs);
		diag_add(diags, DIAG_WARNING, cfg->dev->name, 0, 0, "control.controller", "observe-only",
			 "offers nothing to govern (no clock locking, power limit or precision): "
			 "observed with controller firmware-default instead of %s", ctl->name);
		g->dec.ctl = obs; /* decide's init keeps it */
	}
	return 0;
}

static int governor_init(struct governor *g, const struct governor_cfg *cfg,
			 struct diag_list *diags)
{
	const struct policy *pol = cfg->pol;
	int rc;

	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	if ((rc = check_device(g, cfg, diags)))
		return rc;
	init_slices(g, cfg->dev, pol);
	/* The device part of the envelope is known now; the inlet is judged each
	 * period (any value inside the policy's range stands in for it here). */
	double inlet_c = isfinite(pol->envelope.inlet_min_c) ? pol->envelope.inlet_min_c
		       : isfinite(pol->envelope.inlet_max_c) ? pol->envelope.inlet_max_c : NAN;
	char why[512];
	if (!policy_envelope_check(pol, &g->lim, inlet_c, why, sizeof(why)) && diags)
		diag_add(diags, DIAG_WARNING, pol->path, 0, 0, "envelope", "outside-envelope",
			 "device %s is outside the policy's envelope (%s); the governor will hold "
			 "the safe point", cfg->dev->name, why);
	if ((rc = init_stages(g, pol, diags)))
		return rc;
	if ((rc = init_log(g, cfg))) {
		declog_fini(&g->log);
		fini_stages(g, STAGE_N);
		g->stages_up = false;
		return rc;
	}
	return 0;
}

/* What the device runs before the governor touched it. */
void governor_device_point(const struct governor *g, struct gov_opoint *op)
{
	memset(op, 0, sizeof(*op));
	op->clk_locked = false;
	op->clk_min_khz = g->lim.clk_min_khz;
	op->clk_max_khz = g->lim.clk_default_max_khz;
	op->power_limit_mw = g->lim.power_limit_default_mw;
	if (g->sample.power_limit_mw.valid && g->sample.power_limit_mw.v > 0 &&
	    g->sample.power_limit_mw.v <= (int64_t)g->lim.power_limit_max_mw)
		op->power_limit_mw = (uint32_t)g->sample.power_limit_mw.v;
	op->n_slices = g->slices.n;
}

bool governor_in_force(const struct governor *g, struct gov_opoint *op)
{
	bool dry = g->cfg.dry_run || g->cfg.dry_run_device;
	if (dry)
		governor_device_point(g, op);
	else
		*op = g->cur;
	return dry;
}

static void adopt_device(struct governor *g)
{
	governor_device_point(g, &g->cur);
	g->orig_power_limit_mw = g->cur.power_limit_mw;
}

static bool clocks_differ(const struct gov_opoint *a, const struct gov_opoint *b)
{
	if (a->clk_locked != b->clk_locked)
		return true;
	return a->clk_locked && (a->clk_min_khz != b->clk_min_khz || a->clk_max_khz != b->clk_max_khz);
}

/* One per-slice setting (INT8 shares, shadow rates) written when it changed;
 * a failed write keeps the values in force. */
static uint32_t write_slices(struct governor *g,
			     int (*set)(struct hal_dev *, const double *, size_t), double *want,
			     const double *cur, size_t n)
{
	bool changed = false;
	for (size_t s = 0; s < n; s++)
		changed |= want[s] != cur[s];
	if (!changed)
		return 0;
	int rc = set ? set(g->cfg.dev, want, n) : -EOPNOTSUPP;
	g->wrote |= rc != -EOPNOTSUPP;
	if (!rc)
		return 0;
	memcpy(want, cur, HAL_MAX_SLICES * sizeof(*want));
	return GOV_R_ACTUATE_ERROR;
}

/* Writes only what changed; a failed write keeps that part as it was. */
static uint32_t actuate(struct governor *g, struct gov_opoint *want)
{
	struct hal_dev *dev = g->cfg.dev;
	const struct hal_ops *ops = dev->ops;
	uint32_t reasons = 0;
	int rc;

	if (clocks_differ(&g->cur, want)) {
		if (want->clk_locked && ops->set_clock_range)
			rc = ops->set_clock_range(dev, want->clk_min_khz, want->clk_max_khz);
		else if (!want->clk_locked && ops->reset_clocks)
			rc = ops->reset_clocks(dev);
		else
			rc = -EOPNOTSUPP;
		g->wrote |= rc != -EOPNOTSUPP;
		if (rc) {
			want->clk_locked = g->cur.clk_locked;
			want->clk_min_khz = g->cur.clk_min_khz;
			want->clk_max_khz = g->cur.clk_max_khz;
			reasons |= GOV_R_ACTUATE_ERROR;
		}
	}
	if (want->power_limit_mw != g->cur.power_limit_mw) {
		rc = ops->set_power_limit ? ops->set_power_limit(dev, want->power_limit_mw) : -EOPNOTSUPP;
		g->wrote |= rc != -EOPNOTSUPP;
		if (rc) {
			want->power_limit_mw = g->cur.power_limit_mw;
			reasons |= GOV_R_ACTUATE_ERROR;
		}
	}
	/* The rung before the share: a share never runs in a rung it was not
	 * granted for. */
	if (memcmp(want->low_mode, g->cur.low_mode, want->n_slices)) {
		rc = ops->set_low_mode ? ops->set_low_mode(dev, want->low_mode, want->n_slices)
				       : -EOPNOTSUPP;
		g->wrote |= rc != -EOPNOTSUPP;
		if (rc) {
			memcpy(want->low_mode, g->cur.low_mode, sizeof(want->low_mode));
			memcpy(want->int8_frac, g->cur.int8_frac, sizeof(want->int8_frac));
			reasons |= GOV_R_ACTUATE_ERROR;
		}
	}
	reasons |= write_slices(g, ops->set_precision, want->int8_frac, g->cur.int8_frac,
				want->n_slices);
	reasons |= write_slices(g, ops->set_shadow_rate, want->shadow_rate, g->cur.shadow_rate,
				want->n_slices);
	if (reasons)
		g->actuate_errors++;
	return reasons;
}

/* The controller's shadow-rate asks on the guarded point: none in the
 * safe point or where the backend cannot take them; an operator hold keeps
 * what is in force. Outside the rollback: evidence is what a rolled-back
 * slice needs most. */
static void apply_asks(const struct governor *g, struct gov_period *p)
{
	for (size_t s = 0; s < HAL_MAX_SLICES; s++) {
		bool ask = s < p->after.n_slices && !p->safety && hal_can_set_shadow_rate(g->cfg.dev);
		p->after.shadow_rate[s] = ask ? p->want.op.shadow_rate[s] : 0;
		p->evidence[s] = ask ? p->want.evidence[s] : GOV_EV_NONE;
		if (p->hold && s < p->after.n_slices) {
			p->after.shadow_rate[s] = p->cur.shadow_rate[s];
			p->evidence[s] = GOV_EV_NONE;
		}
	}
}

/* Another writer changed the power limit: the limit the device reports
 * differs from the one govd set (more than 1 W and 1 %) on two periods in a
 * row (one period lets a write settle). govd owns the device: its in-force
 * view takes the device's value, so this period's actuation writes its own
 * decision again, and the change is counted and logged (docs/daemon.md,
 * "Out-of-band changes"). Not in a dry run (govd set nothing), not before
 * govd's first write. True on the period it is found. */
static bool check_out_of_band(struct governor *g)
{
	const struct hal_value *pl = &g->sample.power_limit_mw;
	if (g->cfg.dry_run || !g->wrote || !pl->valid || pl->nan || pl->v <= 0 ||
	    pl->v > HAL_POWER_MAX_MW || !hal_can_set_power_limit(g->cfg.dev)) {
		g->oob_streak = 0;
		return false;
	}
	int64_t want = g->cur.power_limit_mw, d = pl->v - want;
	if (llabs(d) <= 1000 || llabs(d) * 100 <= want) {
		g->oob_streak = 0;
		return false;
	}
	if (++g->oob_streak < 2)
		return false;
	g->oob_streak = 0;
	g->oob_changes++;
	g->oob_found_mw = (uint32_t)pl->v;
	g->oob_expected_mw = g->cur.power_limit_mw;
	g->cur.power_limit_mw = (uint32_t)pl->v;
	return true;
}
/* Actuates the guarded point (not in dry run, where the device keeps what
 * it runs and only the log shows the decision); *before gets the point in
 * force until now. Returns actuate_error reasons. */
static uint32_t apply_point(struct governor *g, struct gov_opoint *after, struct gov_opoint *before)
{
	uint32_t reasons = 0;

	if (!g->cfg.dry_run)
		reasons = actuate(g, after);
	*before = g->cur;
	if (!g->cfg.dry_run)
		g->cur = *after;
	return reasons;
}
/* ---- the read and actuate stages: the device's side of the loop ---- */

/* The device, serving and quality readings (an invalid read still names
 * its faults: they go to the log); the point in force, adopted from the
 * device on the first period and checked for another writer's change. */
static void read_stage_step(void *state, struct gov_period *p)
{
	struct governor *g = state;
	struct hal_dev *dev = g->cfg.dev;

	/* Backends fill the whole sample; a failed read counts as nothing valid
	 * (every required signal a dropout), whatever it wrote before failing. */
	if (dev->ops->sample(dev, &g->sample))
		memset(&g->sample, 0, sizeof(g->sample));
	p->sample = &g->sample;
	p->serving = NULL;
	p->quality = NULL;
	if (hal_can_read_serving(dev) && dev->ops->read_serving(dev, &g->serving) == 0) {
		p->rec.serving_faults = g->serving.fault_bits;
		if (g->serving.valid)
			p->serving = &g->serving;
	}
	if (hal_can_read_quality(dev) && dev->ops->read_quality(dev, &g->quality) == 0) {
		p->rec.quality_faults = g->quality.fault_bits;
		if (g->quality.valid)
			p->quality = &g->quality;
	}
	p->rec.serving_fault_msg = p->rec.serving_faults ? g->serving.fault_msg : NULL;
	p->rec.quality_fault_msg = p->rec.quality_faults ? g->quality.fault_msg : NULL;
	if (!g->started) {
		adopt_device(g);
		g->started = true;
		p->reasons |= GOV_R_INIT;
	}
	if (check_out_of_band(g)) {
		p->rec.oob_found_mw = g->oob_found_mw;
		p->rec.oob_expected_mw = g->oob_expected_mw;
	}
	p->cur = g->cur;
	p->cur_safety = g->safety;
	p->hold = g->operator_hold;
	p->rec.operator_hold = g->operator_hold;
}

static const struct gov_stage_ops stage_read = {
	.name = "read",
	.step = read_stage_step,
};

/* The guarded point with the controller's shadow-rate asks, written to
 * the device (not in a dry run). */
static void actuate_stage_step(void *state, struct gov_period *p)
{
	struct governor *g = state;
	apply_asks(g, p);
	p->reasons |= apply_point(g, &p->after, &p->before);
	g->safety = p->safety;
	p->counters.actuate_errors = g->actuate_errors;
	p->counters.oob_changes = g->oob_changes;
	p->counters.emergencies = g->emergencies;
	p->rec.before = &p->before;
	p->rec.after = &p->after;
	p->rec.reasons = p->reasons;
	p->rec.binding = p->binding;
	p->rec.evidence = p->evidence;
}

static const struct gov_stage_ops stage_actuate = {
	.name = "actuate",
	.step = actuate_stage_step,
};

/* What every decision record names besides its stages' parts. */
static void record_begin(const struct governor *g, uint64_t now, struct declog_record *rec)
{
	*rec = (struct declog_record){
		.t_ms = now,
		.seq = g->seq,
		.policy_name = g->cfg.pol->name,
		.policy_hash = g->cfg.pol->hash_hex,
		.seed = g->cfg.seed,
	};
}

/* The period's observers: the decision log, then the caller's (the sim's
 * accounting, metrics and the fault log). */
static int observe(struct governor *g, const struct gov_period *p)
{
	int rc = declog_decision(&g->log, &p->rec);
	if (rc)
		return rc;
	if (g->cfg.on_period && g->cfg.on_period(g->cfg.cb_ctx, p))
		return 1;
	return 0;
}

int governor_tick(struct governor *g)
{
	struct gov_period *p = &g->period;
	uint64_t now = govd_clock_now_ms(g->cfg.clock);

	p->t_ms = now;
	p->reasons = 0;
	p->binding = GOV_B_NONE;
	record_begin(g, now, &p->rec);
	for (size_t i = 0; i < STAGE_N; i++)
		g->stage[i].ops->step(g->stage[i].state, p);
	int rc = observe(g, p);
	if (rc < 0)
		return rc;
	g->seq++;
	return rc;
}

int governor_run(struct governor *g, uint64_t end_ms)
{
	uint64_t period_ms = g->cfg.pol->control.period_ms;

	for (;;) {
		uint64_t now = govd_clock_now_ms(g->cfg.clock);
		if (now >= end_ms)
			return 0;
		int rc = governor_tick(g);
		if (rc < 0)
			return rc;
		if (rc > 0)
			return 0;
		uint64_t next = now + period_ms;
		if (next > end_ms)
			next = end_ms;
		rc = govd_clock_wait_until(g->cfg.clock, next);
		if (rc < 0)
			return rc;
	}
}
int governor_set_power_budget_mw(struct governor *g, uint32_t cap_mw)
{
	if (!g->stages_up)
		return -EINVAL;
	guard_set_budget_mw(&g->guard.guard, cap_mw);
	return 0;
}
void governor_clear_power_budget(struct governor *g)
{
	if (g->stages_up)
		guard_clear_budget(&g->guard.guard);
}
void governor_hold(struct governor *g, bool hold)
{
	g->operator_hold = hold;
}
int governor_emergency(struct governor *g, const char *why)
{
	if (!g->stages_up)
		return -EINVAL;
	uint64_t now = govd_clock_now_ms(g->cfg.clock);
	uint32_t reasons = 0;
	enum gov_binding binding = GOV_B_NONE;

	if (!g->started) { /* before the first period: the device as the HAL describes it */
		adopt_device(g);
		g->started = true;
		reasons |= GOV_R_INIT;
	}
	struct gov_opoint after;
	guard_emergency(&g->guard.guard, g->slices.n, &after, &reasons, &binding);
	g->safety = true;
	struct gov_opoint before;
	reasons |= apply_point(g, &after, &before);
	g->emergencies++;
	struct declog_record rec;
	record_begin(g, now, &rec);
	/* The last period's estimates and faults: nothing was sampled outside it;
	 * nothing was judged outside it either (no armed or fired triggers). */
	rec.est = &g->est.est;
	rec.faults = g->period.faults;
	rec.before = &before;
	rec.after = &after;
	rec.reasons = reasons;
	rec.binding = binding;
	rec.operator_hold = g->operator_hold;
	gov_rollback_record(&g->rb, now, &rec);
	gov_guard_record(&g->guard, &rec);
	rec.armed = rec.fired = 0;
	rec.emergency = why ? why : "";
	g->seq++;
	return declog_decision(&g->log, &rec);
}

/* The power limit a restore puts back: the backend's record of the
 * originals when it keeps one (after a crash, the adopted one, not what
 * this run's first sample saw), else the first sample's. */
static uint32_t restored_limit_mw(const struct governor *g)
{
	struct hal_dev *dev = g->cfg.dev;
	char buf[4096];
	uint32_t mw = g->orig_power_limit_mw;
	if (!dev->ops->get_original || dev->ops->get_original(dev, buf, sizeof(buf)))
		return mw;
	json_t *j = json_loads(buf, 0, NULL);
	json_t *v = json_object_get(j, "power_limit_mw");
	if (json_is_integer(v) && json_integer_value(v) > 0 &&
	    json_integer_value(v) <= HAL_POWER_MAX_MW)
		mw = (uint32_t)json_integer_value(v);
	json_decref(j);
	return mw;
}

int governor_restore(struct governor *g)
{
	struct hal_dev *dev = g->cfg.dev;
	int rc = 0, r;

	if (g->restored || !g->started)
		return 0;
	/* The backend owns the originals (found at open, or adopted from a
	 * crashed run's state file): its restore is the one (governor_init
	 * refused a device that writes without one). */
	if (g->wrote)
		rc = dev->ops->restore(dev);
	struct gov_opoint orig = { .clk_locked = false,
				   .clk_min_khz = g->lim.clk_min_khz,
				   .clk_max_khz = g->lim.clk_default_max_khz,
				   .power_limit_mw = restored_limit_mw(g),
				   .n_slices = g->slices.n };
	/* Done only when every write went through: a failed restore is tried
	 * again (governor_fini, the daemon's shutdown) rather than forgotten. */
	g->restored = rc == 0;
	if (!rc)
		g->cur = orig;
	r = declog_restore(&g->log, govd_clock_now_ms(g->cfg.clock), &orig, rc);
	return rc ? rc : r;
}

static void governor_fini(struct governor *g)
{
	if (!g->stages_up)
		return;
	governor_restore(g);
	declog_fini(&g->log);
	fini_stages(g, STAGE_N);
	g->stages_up = false;
}

int governor_new(const struct governor_cfg *cfg, struct governor **out, struct diag_list *diags)
{
	struct governor *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	int rc = governor_init(g, cfg, diags);
	if (rc) {
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void governor_free(struct governor *g)
{
	if (!g)
		return;
	governor_fini(g);
	free(g);
}

void governor_handover(struct governor *neu, struct governor *old)
{
	neu->started = old->started;
	neu->wrote = old->wrote;
	neu->orig_power_limit_mw = old->orig_power_limit_mw;
	neu->cur = old->cur;
	neu->seq = old->seq;
	neu->actuate_errors = old->actuate_errors;
	governor_abandon(old); /* neu carries on */
}

void governor_abandon(struct governor *g)
{
	g->restored = true;
}

void governor_assume_point(struct governor *g, const struct gov_opoint *op)
{
	g->cur = *op;
}

const struct policy *governor_policy(const struct governor *g)
{
	return g->cfg.pol;
}

const struct hal_limits *governor_limits(const struct governor *g)
{
	return &g->lim;
}

const struct gov_opoint *governor_point(const struct governor *g)
{
	return &g->cur;
}

const struct gov_estimates *governor_estimates(const struct governor *g)
{
	return &g->est.est;
}

const enum gov_fault *governor_faults(const struct governor *g)
{
	return g->period.faults;
}

size_t governor_slices(const struct governor *g, const char (**names)[HAL_NAME_LEN])
{
	*names = (const char(*)[HAL_NAME_LEN])g->slices.name;
	return g->slices.n;
}

void governor_status(const struct governor *g, struct governor_status *out)
{
	*out = (struct governor_status){
		.started = g->started,
		.hold = g->operator_hold,
		.restored = g->restored,
		.periods = g->seq,
		.actuate_errors = g->actuate_errors,
		.oob_changes = g->oob_changes,
		.emergencies = g->emergencies,
		.rollbacks = g->rb.rollbacks,
		.recoveries = g->rb.recoveries,
		.rb_state = g->rb.state,
		.fault_onsets = g->val.onsets,
		.orig_power_limit_mw = g->orig_power_limit_mw,
		.envelope = g->guard.outside_envelope ? g->guard.envelope_why : NULL,
		.controller = g->stages_up ? g->dec.ctl->name : "",
	};
}

uint32_t governor_power_request_mw(const struct governor *g)
{
	if (!g->started)
		return g->lim.power_limit_max_mw;
	const struct gov_estimates *e = &g->est.est;
	if (e->throttle & HAL_THR_POWER_CAP)
		return g->lim.power_limit_max_mw;
	double w = e->power_w[HAL_RAIL_ACCEL];
	if (!(w > 0))
		return g->lim.power_limit_max_mw;
	double mw = w * 1000.0;
	return mw > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)mw;
}
