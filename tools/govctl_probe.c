/* govctl probe: what a govd deployment config finds on this machine. Opens
 * every device of the config through the HAL read-only (no set_* call ever;
 * nvml opened with read_only=true, options that would drive or take over
 * something left out: a gpio brake output, a serving quality socket), lists
 * limits, capabilities and one sample of every sensor, then checks what the
 * daemon needs: the policy loads and its envelope admits the device, the
 * required signals are there, and a second sample one control period later
 * is fresh. Exit 0 when every device is usable, 1 with the problems listed,
 * 2 for bad usage. docs/backends.md ("govctl probe"). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "governor/controllers/controller.h"
#include "governor/daemon/config.h"
#include "governor/policy/policy.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"
#include "hal/hal_modbus.h"
#include "hal/hal_sim.h"
#include "tools/govctl.h"

#define MAX_NOTES 24
#define NOTE_LEN 320
#define DEFAULT_PERIOD_MS 100

struct notes {
	size_t n;
	char v[MAX_NOTES][NOTE_LEN];
};

static void note(struct notes *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct notes *l, const char *fmt, ...)
{
	if (l->n == MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->v[l->n++], NOTE_LEN, fmt, ap);
	va_end(ap);
}

/* Every diagnostic of one severity, each a note with a prefix. */
static void note_diags(struct notes *l, const struct diag_list *d, enum diag_sev sev, const char *pre)
{
	for (size_t i = 0; i < d->n; i++) {
		if (d->v[i].sev != sev)
			continue;
		char buf[NOTE_LEN];
		diag_format(&d->v[i], buf, sizeof(buf));
		note(l, "%s%s", pre, buf);
	}
}

enum role { ROLE_ACCEL, ROLE_METER, ROLE_LINES, ROLE_SERVING };
static const char *const role_names[] = { "accelerator", "power-meter", "alert/brake lines",
					   "serving" };

/* What one read_serving / read_quality returned, copied out (the backend's
 * pointers are valid only until its next call). */
struct serving_copy {
	int rc;
	bool valid;
	uint64_t t_ms, requests, tokens, tokens_int8, queue, running;
	uint64_t ttft_n, tbt_n, e2e_n; /* observations in the cumulative histograms */
	size_t n_slices;
	char slice[HAL_MAX_SLICES][HAL_NAME_LEN];
	uint32_t faults;
	char fault[NOTE_LEN];
};

struct quality_copy {
	int rc;
	bool valid;
	size_t n_slices;
	uint64_t samples[HAL_MAX_SLICES], mismatches[HAL_MAX_SLICES];
	uint32_t faults;
	char fault[NOTE_LEN];
};

struct aux_value {
	const char *name, *unit;
	bool have;
	struct hal_value v;
	double scale;
};

struct pdev {
	const struct config_device *cd;
	const struct policy *pol;
	enum role role;
	bool opened, lim_ok, sampled;
	struct hal_limits lim;
	bool can[8];
	struct hal_sample s[2];
	struct gov_reading r[2][GOV_SIG_N];
	enum gov_fault f[2][GOV_SIG_N];
	uint64_t waited_ms, stale_ms;
	bool have_serving, have_quality;
	struct serving_copy sv[2];
	struct quality_copy q;
	size_t n_aux;
	struct aux_value aux[3];
	int envelope; /* 1 inside, 0 outside, -1 not checked */
	char envelope_why[NOTE_LEN];
	struct notes withheld, problems, warnings;
};

static const char *const cap_names[] = { "set_clocks",	  "set_power_limit", "read_serving",
					  "read_quality", "set_precision",   "alert",
					  "brake",	  "adopt_original" };

static void take_caps(struct pdev *p, const struct hal_dev *d)
{
	p->can[0] = hal_can_set_clocks(d);
	p->can[1] = hal_can_set_power_limit(d);
	p->can[2] = hal_can_read_serving(d);
	p->can[3] = hal_can_read_quality(d);
	p->can[4] = hal_can_set_precision(d);
	p->can[5] = hal_can_alert(d);
	p->can[6] = hal_can_brake(d);
	p->can[7] = hal_can_adopt_original(d);
}

static const char *const sig_units[GOV_SIG_N] = { "W", "W", "W", "C", "C", "C",
						   "MHz", "W", "%", "J", "J", "J" };

static const struct {
	uint32_t bit;
	const char *name;
} thr_names[] = {
	{ HAL_THR_POWER_CAP, "power_cap" }, { HAL_THR_SW_THERMAL, "sw_thermal" },
	{ HAL_THR_HW_SLOWDOWN, "hw_slowdown" }, { HAL_THR_APP_CLOCKS, "app_clocks" },
	{ HAL_THR_IDLE, "idle" },
};

static void throttle_text(uint32_t t, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(thr_names) / sizeof(thr_names[0]); i++)
		if (t & thr_names[i].bit)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
				 thr_names[i].name);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static void copy_serving(struct serving_copy *c, int rc, const struct hal_serving *s)
{
	memset(c, 0, sizeof(*c));
	c->rc = rc;
	if (rc)
		return;
	c->valid = s->valid;
	c->t_ms = s->t_ms;
	c->requests = s->requests_completed;
	c->tokens = s->tokens_generated;
	c->tokens_int8 = s->tokens_int8;
	c->queue = s->queue_len;
	c->running = s->running;
	c->ttft_n = s->ttft ? s->ttft->n : 0;
	c->tbt_n = s->tbt ? s->tbt->n : 0;
	c->e2e_n = s->e2e ? s->e2e->n : 0;
	c->n_slices = s->n_slices < HAL_MAX_SLICES ? s->n_slices : HAL_MAX_SLICES;
	for (size_t i = 0; i < c->n_slices; i++)
		memcpy(c->slice[i], s->slice_name[i], HAL_NAME_LEN);
	c->faults = s->fault_bits;
	snprintf(c->fault, sizeof(c->fault), "%s", s->fault_msg ? s->fault_msg : "");
}

/* The options as the daemon would pass them, less what a read-only look
 * must not do. */
static size_t probe_options(const struct config_device *cd, const char **keys, const char **vals,
			    struct notes *withheld)
{
	size_t n = 0;
	bool is_nvml = !strcmp(cd->backend, "nvml");
	for (size_t i = 0; i < cd->n_opts; i++) {
		const char *k = cd->keys[i];
		if (!strcmp(cd->backend, "gpio") && !strncmp(k, "brake_", 6)) {
			note(withheld, "%s: %s (requesting the output line would drive it)", k,
			     cd->values[i]);
			continue;
		}
		if (!strcmp(cd->backend, "serving") && !strcmp(k, "quality_socket")) {
			note(withheld, "%s: %s (binding it would take it from a running govd)", k,
			     cd->values[i]);
			continue;
		}
		if (is_nvml && !strcmp(k, "read_only"))
			continue;
		keys[n] = k;
		vals[n++] = cd->values[i];
	}
	if (is_nvml) {
		keys[n] = "read_only";
		vals[n++] = "true";
	}
	return n;
}

static enum role role_of(const char *backend)
{
	if (!strcmp(backend, "modbus"))
		return ROLE_METER;
	if (!strcmp(backend, "gpio"))
		return ROLE_LINES;
	if (!strcmp(backend, "serving"))
		return ROLE_SERVING;
	return ROLE_ACCEL;
}

/* One control period: plant time for sim, real time otherwise. */
static int wait_period(struct hal_dev *dev, bool sim, uint64_t t0_ms, uint32_t period_ms)
{
	if (sim) {
		struct govd_clock clk;
		int rc = hal_sim_clock(dev, &clk);
		return rc ? rc : govd_clock_wait_until(&clk, t0_ms + period_ms);
	}
	struct timespec ts = { .tv_sec = period_ms / 1000, .tv_nsec = (long)(period_ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return 0;
}

static void read_aux(struct pdev *p, struct hal_dev *dev)
{
#if GOVD_WITH_MODBUS
	static const struct {
		enum mb_quantity q;
		const char *name, *unit;
	} a[] = { { MB_Q_VOLTAGE_V, "voltage", "V" },
		  { MB_Q_CURRENT_A, "current", "A" },
		  { MB_Q_FREQUENCY_HZ, "frequency", "Hz" } };
	for (size_t i = 0; i < 3; i++) {
		struct aux_value *v = &p->aux[p->n_aux++];
		v->name = a[i].name;
		v->unit = a[i].unit;
		v->scale = 1e-3; /* milli-units */
		v->have = hal_modbus_aux(dev, a[i].q, &v->v) == 0;
	}
#else
	(void)p;
	(void)dev;
#endif
}

static void check_accel(struct pdev *p)
{
	for (int s = 0; s < GOV_SIG_N; s++) {
		enum gov_fault f = p->f[1][s];
		const struct gov_reading *r = &p->r[1][s];
		if (gov_signal_required(s)) {
			if (!r->valid)
				note(&p->problems, "required signal %s missing in the second sample%s%s%s",
				     gov_signal_name(s), p->s[1].fault[0] ? " (last fault: " : "",
				     p->s[1].fault, p->s[1].fault[0] ? ")" : "");
			else if (f == GOV_FAULT_STALE)
				note(&p->problems,
				     "required signal %s stale: second sample at %llu ms holds a value "
				     "from %llu ms (telemetry.stale_ms %llu)",
				     gov_signal_name(s), (unsigned long long)p->s[1].t_ms,
				     (unsigned long long)r->t_ms, (unsigned long long)p->stale_ms);
			else if (f != GOV_FAULT_NONE)
				note(&p->problems, "required signal %s: %s (%g %s)", gov_signal_name(s),
				     gov_fault_name(f), r->v, sig_units[s]);
		} else if (f != GOV_FAULT_NONE && (r->valid || p->r[0][s].valid)) {
			note(&p->warnings, "%s: %s in the second sample", gov_signal_name(s),
			     gov_fault_name(f));
		}
	}
}

static void check_meter(struct pdev *p)
{
	bool fresh = false;
	for (int s = GOV_SIG_POWER_ACCEL; s <= GOV_SIG_POWER_HOST; s++)
		fresh |= p->r[1][s].valid && p->f[1][s] == GOV_FAULT_NONE;
	if (!fresh)
		note(&p->problems, "no fresh power reading in the second sample%s%s%s",
		     p->s[1].fault[0] ? " (last fault: " : "", p->s[1].fault, p->s[1].fault[0] ? ")" : "");
	for (int s = 0; s < GOV_SIG_N; s++)
		if (p->r[1][s].valid && p->f[1][s] != GOV_FAULT_NONE)
			note(&p->warnings, "%s: %s in the second sample", gov_signal_name(s),
			     gov_fault_name(p->f[1][s]));
}

static void check_serving(struct pdev *p)
{
	const struct serving_copy *c = &p->sv[1];
	if (c->rc)
		note(&p->problems, "read_serving failed: %s", strerror(-c->rc));
	else if (!c->valid)
		note(&p->problems, "second read_serving not valid%s%s", c->fault[0] ? ": " : "",
		     c->fault);
	else if (c->faults & ~(uint32_t)HAL_SVF_RESET)
		note(&p->warnings, "read_serving faults 0x%x: %s", c->faults, c->fault);
	else if (c->t_ms <= p->sv[0].t_ms)
		note(&p->problems, "read_serving timestamps do not advance (%llu, then %llu ms)",
		     (unsigned long long)p->sv[0].t_ms, (unsigned long long)c->t_ms);
}

static void probe_one(struct pdev *p, uint32_t period_ms)
{
	const struct config_device *cd = p->cd;
	const char *keys[CONFIG_MAX_OPTS + 1], *vals[CONFIG_MAX_OPTS + 1];
	struct hal_dev_cfg hc;
	struct diag_list dl = { 0 };
	struct hal_dev dev = { 0 };

	p->role = role_of(cd->backend);
	p->envelope = -1;
	config_dev_cfg(cd, &hc);
	hc.n_opts = probe_options(cd, keys, vals, &p->withheld);
	hc.keys = keys;
	hc.values = vals;
	if (p->role == ROLE_LINES && !hc.n_opts) {
		note(&p->warnings, "only a brake line is configured: not opened, not verified");
		return;
	}
	int rc = hal_open(&dev, &hc, &dl);
	note_diags(&p->warnings, &dl, DIAG_WARNING, "open: ");
	if (rc) {
		note(&p->problems, "cannot open (%s)", strerror(-rc));
		note_diags(&p->problems, &dl, DIAG_ERROR, "  ");
		diag_clear(&dl);
		return;
	}
	diag_clear(&dl);
	p->opened = true;
	take_caps(p, &dev);
	rc = dev.ops->get_limits(&dev, &p->lim);
	p->lim_ok = rc == 0;
	/* A serving device without options.power_backend has no limits or
	 * sensors (docs/serving-integration.md); governor_init needs them. */
	bool no_sensors = rc == -EOPNOTSUPP && p->role == ROLE_SERVING;
	if (no_sensors)
		note(&p->problems,
		     "govd cannot govern this device as configured: the serving backend alone "
		     "offers no limits or sensors (get_limits, sample: not supported) and "
		     "governor_init needs the limits; pair it with the accelerator that runs the "
		     "server through options.power_backend (e.g. nvml with power.index), "
		     "docs/serving-integration.md");
	else if (rc)
		note(&p->problems, "get_limits failed: %s", strerror(-rc));

	bool sim = !strcmp(cd->backend, "sim");
	for (int k = 0; k < 2; k++) {
		if (k == 1) {
			uint64_t t0 = govd_mono_ms();
			if ((rc = wait_period(&dev, sim, p->s[0].t_ms, period_ms)))
				note(&p->problems, "cannot wait a period: %s", strerror(-rc));
			p->waited_ms = sim ? period_ms : govd_mono_ms() - t0;
		}
		memset(&p->s[k], 0, sizeof(p->s[k]));
		if (!no_sensors && (rc = dev.ops->sample(&dev, &p->s[k]))) {
			note(&p->problems, "sample %d failed: %s", k + 1, strerror(-rc));
			goto close_dev;
		}
		gov_readings_from_sample(&p->s[k], p->r[k]);
		if (hal_can_read_serving(&dev) && (k == 0 || p->role == ROLE_SERVING)) {
			struct hal_serving sv;
			memset(&sv, 0, sizeof(sv));
			copy_serving(&p->sv[k], dev.ops->read_serving(&dev, &sv), &sv);
			p->have_serving = true;
		}
	}
	p->sampled = !no_sensors;
	if (hal_can_read_quality(&dev)) {
		struct hal_quality q;
		memset(&q, 0, sizeof(q));
		p->q.rc = dev.ops->read_quality(&dev, &q);
		p->q.valid = q.valid;
		p->q.n_slices = q.n_slices < HAL_MAX_SLICES ? q.n_slices : HAL_MAX_SLICES;
		memcpy(p->q.samples, q.samples, sizeof(q.samples));
		memcpy(p->q.mismatches, q.mismatches, sizeof(q.mismatches));
		p->q.faults = q.fault_bits;
		snprintf(p->q.fault, sizeof(p->q.fault), "%s", q.fault_msg ? q.fault_msg : "");
		p->have_quality = true;
	}
	if (!strcmp(cd->backend, "modbus"))
		read_aux(p, &dev);

	/* The governor's own validator, at the policy's staleness limit. */
	struct validator v;
	struct validate_cfg vc = {
		.stale_ms = p->pol ? p->pol->telemetry.stale_ms : policy_default_stale_ms(period_ms),
		.stuck_periods = p->pol && p->pol->telemetry.stuck_periods ? p->pol->telemetry.stuck_periods : 10,
		.stuck_witness_w = 1,
	};
	if (!vc.stale_ms)
		vc.stale_ms = policy_default_stale_ms(period_ms);
	p->stale_ms = vc.stale_ms;
	validate_init(&v, &vc);
	for (int k = 0; k < 2; k++)
		validate_step(&v, p->s[k].t_ms, p->r[k], p->f[k]);
	validate_fini(&v);
	if (p->sampled && p->s[1].t_ms <= p->s[0].t_ms)
		note(&p->problems, "sample timestamps do not advance (%llu, then %llu ms)",
		     (unsigned long long)p->s[0].t_ms, (unsigned long long)p->s[1].t_ms);

	switch (p->role) {
	case ROLE_ACCEL:
		check_accel(p);
		break;
	case ROLE_METER:
		check_meter(p);
		break;
	case ROLE_SERVING:
		check_serving(p);
		break;
	case ROLE_LINES:
		break;
	}
	if (p->role == ROLE_ACCEL && p->pol && p->lim_ok) {
		double inlet = p->r[0][GOV_SIG_TEMP_INLET].valid ? p->r[0][GOV_SIG_TEMP_INLET].v : NAN;
		p->envelope = policy_envelope_check(p->pol, &p->lim, inlet, p->envelope_why,
						    sizeof(p->envelope_why));
		if (!p->envelope)
			note(&p->problems, "outside policy %s's envelope (the governor would hold the "
					   "safe point): %s",
			     p->pol->name, p->envelope_why);
	}
	if (p->role == ROLE_METER || p->role == ROLE_LINES)
		note(&p->warnings,
		     "not an accelerator (%s): govd governs every device of its config, and this "
		     "one has no accelerator power, junction temperature or clock, so its governor "
		     "reports them missing every period; it belongs next to an accelerator device",
		     role_names[p->role]);
close_dev:
	hal_close(&dev);
}

/* ---- output ---------------------------------------------------------- */

static json_t *jval(const struct gov_reading *r, const struct hal_value *hv, enum gov_fault f,
		    const char *unit)
{
	json_t *o = json_object();
	json_object_set_new(o, "valid", json_boolean(hv->valid));
	json_object_set_new(o, "value", hv->valid && !isnan(r->v) ? json_real(r->v) : json_null());
	json_object_set_new(o, "unit", json_string(unit));
	json_object_set_new(o, "nan", json_boolean(hv->nan));
	json_object_set_new(o, "t_ms", json_integer((json_int_t)hv->t_ms));
	json_object_set_new(o, "check", json_string(gov_fault_name(f)));
	return o;
}

static const struct hal_value *hv_of(const struct hal_sample *s, int sig)
{
	if (sig <= GOV_SIG_POWER_HOST)
		return &s->power_mw[sig - GOV_SIG_POWER_ACCEL];
	if (sig <= GOV_SIG_TEMP_INLET)
		return &s->temp_mc[sig - GOV_SIG_TEMP_JUNCTION];
	if (sig == GOV_SIG_CLOCK)
		return &s->clk_khz;
	if (sig == GOV_SIG_POWER_LIMIT)
		return &s->power_limit_mw;
	if (sig == GOV_SIG_UTIL)
		return &s->util_pct;
	return &s->energy_mj[sig - GOV_SIG_ENERGY_ACCEL];
}

/* A signal the backend gave in neither sample and the governor does not
 * require is "not offered" (validate.h: optional signals fault only after
 * they have once been valid). */
static bool offered(const struct pdev *p, int g)
{
	return gov_signal_required(g) || hv_of(&p->s[0], g)->valid || hv_of(&p->s[1], g)->valid;
}

static json_t *jnotes(const struct notes *n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n->n; i++)
		json_array_append_new(a, json_string(n->v[i]));
	return a;
}

static json_t *jserving(const struct serving_copy *c)
{
	json_t *sl = json_array();
	for (size_t i = 0; i < c->n_slices; i++)
		json_array_append_new(sl, json_string(c->slice[i]));
	return json_pack("{s:i, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:i, s:s}",
			 "rc", c->rc, "valid", c->valid, "t_ms", (json_int_t)c->t_ms,
			 "requests_completed", (json_int_t)c->requests, "tokens_generated",
			 (json_int_t)c->tokens, "tokens_int8", (json_int_t)c->tokens_int8,
			 "queue_len", (json_int_t)c->queue, "running", (json_int_t)c->running,
			 "ttft_count", (json_int_t)c->ttft_n, "tbt_count", (json_int_t)c->tbt_n,
			 "e2e_count", (json_int_t)c->e2e_n, "slices", sl, "faults", (int)c->faults,
			 "fault", c->fault);
}

static json_t *jdev(const struct pdev *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(p->cd->name));
	json_object_set_new(o, "backend", json_string(p->cd->backend));
	json_object_set_new(o, "role", json_string(role_names[p->role]));
	json_object_set_new(o, "usable", json_boolean(p->problems.n == 0));
	json_object_set_new(o, "policy",
			    json_pack("{s:s, s:o, s:o}", "path", p->cd->policy_path, "name",
				      p->pol ? json_string(p->pol->name) : json_null(), "hash",
				      p->pol ? json_string(p->pol->hash_hex) : json_null()));
	json_object_set_new(o, "opened", json_boolean(p->opened));
	json_object_set_new(o, "options_withheld", jnotes(&p->withheld));
	if (p->lim_ok) {
		const struct hal_limits *l = &p->lim;
		json_object_set_new(
			o, "limits",
			json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				  "model", l->model, "driver_version", l->driver_version,
				  "firmware_version", l->firmware_version, "clk_min_khz",
				  (json_int_t)l->clk_min_khz, "clk_max_khz", (json_int_t)l->clk_max_khz,
				  "clk_step_khz", (json_int_t)l->clk_step_khz, "clk_default_max_khz",
				  (json_int_t)l->clk_default_max_khz, "power_limit_min_mw",
				  (json_int_t)l->power_limit_min_mw, "power_limit_max_mw",
				  (json_int_t)l->power_limit_max_mw, "power_limit_default_mw",
				  (json_int_t)l->power_limit_default_mw, "slowdown_mc",
				  (json_int_t)l->slowdown_mc, "shutdown_mc", (json_int_t)l->shutdown_mc));
		json_t *lj = json_object_get(o, "limits");
		json_object_set_new(lj, "uuid", json_string(l->uuid));
		json_object_set_new(lj, "pci_bus_id", json_string(l->pci_bus_id));
		json_object_set_new(lj, "index", l->have_index ? json_integer((json_int_t)l->index)
							       : json_null());
	}
	if (p->opened) {
		json_t *c = json_object();
		for (size_t i = 0; i < 8; i++)
			json_object_set_new(c, cap_names[i], json_boolean(p->can[i]));
		json_object_set_new(o, "capabilities", c);
	}
	if (p->sampled) {
		json_t *arr = json_array();
		for (int k = 0; k < 2; k++) {
			const struct hal_sample *s = &p->s[k];
			json_t *sig = json_object();
			for (int g = 0; g < GOV_SIG_N; g++)
				json_object_set_new(sig, gov_signal_name(g),
						    offered(p, g) ? jval(&p->r[k][g], hv_of(s, g),
									 p->f[k][g], sig_units[g])
								  : json_string("not offered"));
			char thr[96];
			throttle_text(s->throttle, thr, sizeof(thr));
			json_array_append_new(
				arr, json_pack("{s:I, s:o, s:i, s:s, s:I, s:I, s:i, s:s}", "t_ms",
					       (json_int_t)s->t_ms, "signals", sig, "throttle_bits",
					       (int)s->throttle, "throttle", thr, "clamp_events",
					       (json_int_t)s->clamp_events, "clamp_time_ms",
					       (json_int_t)s->clamp_time_ms, "faults", (int)s->fault_count,
					       "fault", s->fault));
		}
		json_object_set_new(o, "samples", arr);
		json_object_set_new(o, "second_sample_after_ms", json_integer((json_int_t)p->waited_ms));
		json_object_set_new(o, "stale_ms", json_integer((json_int_t)p->stale_ms));
	}
	if (p->n_aux) {
		json_t *a = json_object();
		for (size_t i = 0; i < p->n_aux; i++)
			json_object_set_new(a, p->aux[i].name,
					    p->aux[i].have && p->aux[i].v.valid
						    ? json_real(p->aux[i].v.v * p->aux[i].scale)
						    : json_null());
		json_object_set_new(o, "meter", a);
	}
	if (p->have_serving) {
		json_t *a = json_array();
		json_array_append_new(a, jserving(&p->sv[0]));
		if (p->role == ROLE_SERVING)
			json_array_append_new(a, jserving(&p->sv[1]));
		json_object_set_new(o, "serving", a);
	}
	if (p->have_quality) {
		json_t *s = json_array(), *m = json_array();
		for (size_t i = 0; i < p->q.n_slices; i++) {
			json_array_append_new(s, json_integer((json_int_t)p->q.samples[i]));
			json_array_append_new(m, json_integer((json_int_t)p->q.mismatches[i]));
		}
		json_object_set_new(o, "quality",
				    json_pack("{s:i, s:b, s:o, s:o, s:i, s:s}", "rc", p->q.rc, "valid",
					      p->q.valid, "samples", s, "mismatches", m, "faults",
					      (int)p->q.faults, "fault", p->q.fault));
	}
	json_object_set_new(o, "envelope",
			    p->envelope < 0 ? json_null()
					    : json_pack("{s:b, s:s}", "inside", p->envelope == 1,
							"why", p->envelope_why));
	json_object_set_new(o, "problems", jnotes(&p->problems));
	json_object_set_new(o, "warnings", jnotes(&p->warnings));
	return o;
}

static void khz_mhz(char *buf, size_t len, uint32_t khz)
{
	if (khz)
		snprintf(buf, len, "%g", khz / 1000.0);
	else
		snprintf(buf, len, "-");
}

static void print_value(FILE *f, const struct gov_reading *r, const struct hal_value *hv,
			enum gov_fault flt, const char *unit)
{
	char buf[48];
	if (!hv->valid)
		snprintf(buf, sizeof(buf), "-");
	else if (hv->nan)
		snprintf(buf, sizeof(buf), "NaN");
	else
		snprintf(buf, sizeof(buf), "%.1f %s", r->v, unit);
	fprintf(f, "  %-14s", buf);
	fprintf(f, " %-12s", !hv->valid ? "invalid" : flt == GOV_FAULT_NONE ? "ok" : gov_fault_name(flt));
}

static void print_dev(FILE *f, const struct pdev *p)
{
	const struct config_device *cd = p->cd;
	fprintf(f, "\n%s  backend %s  role %s  policy %s", cd->name, cd->backend,
		role_names[p->role], p->pol ? p->pol->name : "(not loaded)");
	if (p->pol)
		fprintf(f, " (%s)", p->pol->hash_hex);
	fprintf(f, "\n");
	for (size_t i = 0; i < p->withheld.n; i++)
		fprintf(f, "  withheld option  %s\n", p->withheld.v[i]);
	if (p->lim_ok) {
		const struct hal_limits *l = &p->lim;
		char a[16], b[16], c[16], d[16];
		khz_mhz(a, sizeof(a), l->clk_min_khz);
		khz_mhz(b, sizeof(b), l->clk_max_khz);
		khz_mhz(c, sizeof(c), l->clk_step_khz);
		khz_mhz(d, sizeof(d), l->clk_default_max_khz);
		fprintf(f, "  model     %s\n  driver    %s\n  firmware  %s\n",
			l->model[0] ? l->model : "-", l->driver_version[0] ? l->driver_version : "-",
			l->firmware_version[0] ? l->firmware_version : "-");
		if (l->uuid[0] || l->pci_bus_id[0] || l->have_index) {
			fprintf(f, "  identity  uuid %s, pci %s, index ", l->uuid[0] ? l->uuid : "-",
				l->pci_bus_id[0] ? l->pci_bus_id : "-");
			if (l->have_index)
				fprintf(f, "%u\n", l->index);
			else
				fprintf(f, "-\n");
		}
		fprintf(f, "  clock     %s..%s MHz, step %s MHz, default max %s MHz\n", a, b, c, d);
		fprintf(f, "  power cap %g..%g W, default %g W\n", l->power_limit_min_mw / 1000.0,
			l->power_limit_max_mw / 1000.0, l->power_limit_default_mw / 1000.0);
		fprintf(f, "  thermal   slowdown %g C, shutdown %g C  (0: not offered)\n",
			l->slowdown_mc / 1000.0, l->shutdown_mc / 1000.0);
	}
	if (p->opened) {
		fprintf(f, "  can      ");
		for (size_t i = 0; i < 8; i++)
			fprintf(f, " %s=%s", cap_names[i], p->can[i] ? "yes" : "no");
		fprintf(f, "\n");
	}
	if (p->sampled) {
		fprintf(f, "  %-14s  %-14s %-12s  %-14s %-12s\n", "signal", "sample 1", "check",
			"sample 2", "check");
		for (int g = 0; g < GOV_SIG_N; g++) {
			if (!offered(p, g))
				continue; /* listed below */
			fprintf(f, "  %-14s", gov_signal_name(g));
			for (int k = 0; k < 2; k++)
				print_value(f, &p->r[k][g], hv_of(&p->s[k], g), p->f[k][g], sig_units[g]);
			fprintf(f, "\n");
		}
		fprintf(f, "  not offered   ");
		bool any = false;
		for (int g = 0; g < GOV_SIG_N; g++)
			if (!offered(p, g))
				fprintf(f, " %s", gov_signal_name(g)), any = true;
		fprintf(f, "%s\n", any ? "" : " (none)");
		char thr[96];
		throttle_text(p->s[1].throttle, thr, sizeof(thr));
		fprintf(f, "  throttle      %s; clamp events %llu, clamp time %llu ms\n", thr,
			(unsigned long long)p->s[1].clamp_events,
			(unsigned long long)p->s[1].clamp_time_ms);
		fprintf(f, "  sensor faults %u%s%s\n", p->s[1].fault_count, p->s[1].fault[0] ? ", last: " : "",
			p->s[1].fault);
		fprintf(f, "  second sample %llu ms after the first (stale after %llu ms)\n",
			(unsigned long long)p->waited_ms, (unsigned long long)p->stale_ms);
	}
	for (size_t i = 0; i < p->n_aux; i++) {
		if (p->aux[i].have && p->aux[i].v.valid)
			fprintf(f, "  meter %-9s %.3f %s\n", p->aux[i].name,
				p->aux[i].v.v * p->aux[i].scale, p->aux[i].unit);
	}
	if (p->have_serving) {
		const struct serving_copy *c = &p->sv[p->role == ROLE_SERVING ? 1 : 0];
		fprintf(f, "  serving       %s: requests %llu, tokens %llu (int8 %llu), queue %llu, "
			   "running %llu, ttft/tbt/e2e observations %llu/%llu/%llu, slices",
			c->rc ? strerror(-c->rc) : c->valid ? "valid" : "not valid",
			(unsigned long long)c->requests, (unsigned long long)c->tokens,
			(unsigned long long)c->tokens_int8, (unsigned long long)c->queue,
			(unsigned long long)c->running, (unsigned long long)c->ttft_n,
			(unsigned long long)c->tbt_n, (unsigned long long)c->e2e_n);
		for (size_t i = 0; i < c->n_slices; i++)
			fprintf(f, "%s%s", i ? "," : " ", c->slice[i]);
		fprintf(f, "%s%s%s\n", c->n_slices ? "" : " none", c->fault[0] ? "; fault: " : "",
			c->fault);
	}
	if (p->have_quality) {
		fprintf(f, "  quality       %s:", p->q.rc ? strerror(-p->q.rc) : p->q.valid ? "valid" : "not valid");
		for (size_t i = 0; i < p->q.n_slices; i++)
			fprintf(f, " %llu/%llu", (unsigned long long)p->q.mismatches[i],
				(unsigned long long)p->q.samples[i]);
		fprintf(f, " (mismatches/samples per slice)\n");
	}
	if (p->envelope >= 0)
		fprintf(f, "  envelope      %s%s%s\n", p->envelope ? "inside" : "OUTSIDE",
			p->envelope ? "" : ": ", p->envelope ? "" : p->envelope_why);
	for (size_t i = 0; i < p->warnings.n; i++)
		fprintf(f, "  warning       %s\n", p->warnings.v[i]);
	for (size_t i = 0; i < p->problems.n; i++)
		fprintf(f, "  PROBLEM       %s\n", p->problems.v[i]);
	fprintf(f, "  verdict       %s\n", p->problems.n ? "NOT USABLE" : "usable");
}

static void probe_usage(FILE *f)
{
	fprintf(f, "usage: govctl probe --config FILE [--json]\n"
		   "  opens every device of a govd config read-only, lists limits, capabilities\n"
		   "  and one sample of every sensor, and checks policy, envelope, required\n"
		   "  signals and freshness; exit 0 when every device is usable, 1 otherwise\n");
}

int govctl_probe(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	bool as_json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 'j':
			as_json = true;
			break;
		case 'h':
			probe_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			probe_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	if (!path || optind < argc) {
		fprintf(stderr, "govctl probe: %s\n", path ? "unexpected argument" : "--config is required");
		probe_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}

	struct diag_list dl = { 0 };
	struct config *cfg = NULL;
	if (config_load(path, &cfg, &dl)) {
		govctl_print_diags(&dl);
		diag_clear(&dl);
		fprintf(stderr, "govctl probe: %s: the config does not load; nothing probed\n", path);
		if (as_json) {
			json_t *o = json_pack("{s:s, s:b, s:[s]}", "config", path, "usable", 0,
					      "problems", "the config does not load (diagnostics on stderr)");
			json_dumpf(o, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(o);
		}
		return GOVCTL_EXIT_FAIL;
	}
	govctl_print_diags(&dl); /* warnings */
	diag_clear(&dl);

	struct pdev *pd = calloc(cfg->n_devices, sizeof(*pd));
	struct policy *pols[CONFIG_MAX_DEVICES] = { 0 };
	struct notes cfg_problems = { 0 };
	uint32_t period_ms = 0;
	if (!pd) {
		config_free(cfg);
		return GOVCTL_EXIT_FAIL;
	}
	for (size_t i = 0; i < cfg->n_devices; i++) {
		pd[i].cd = &cfg->dev[i];
		for (size_t j = 0; j < i && !pd[i].pol; j++)
			if (!strcmp(cfg->dev[j].policy_path, cfg->dev[i].policy_path) && pols[j])
				pd[i].pol = pols[j];
		if (pd[i].pol)
			continue;
		bool tried = false;
		for (size_t j = 0; j < i; j++)
			tried |= !strcmp(cfg->dev[j].policy_path, cfg->dev[i].policy_path);
		if (!tried && policy_load(cfg->dev[i].policy_path, &pols[i], &dl) == 0)
			pd[i].pol = pols[i];
		note_diags(&pd[i].warnings, &dl, DIAG_WARNING, "policy: ");
		if (!pd[i].pol) {
			note(&pd[i].problems, "policy %s does not load", cfg->dev[i].policy_path);
			note_diags(&pd[i].problems, &dl, DIAG_ERROR, "  ");
		}
		diag_clear(&dl);
	}
	/* One loop ticks every device: the daemon refuses policies whose periods differ. */
	for (size_t i = 0; i < cfg->n_devices; i++) {
		if (!pd[i].pol)
			continue;
		if (!period_ms)
			period_ms = pd[i].pol->control.period_ms;
		else if (pd[i].pol->control.period_ms != period_ms)
			note(&cfg_problems,
			     "%s's policy runs at %u ms, an earlier device's at %u ms: govd needs one "
			     "period",
			     cfg->dev[i].name, pd[i].pol->control.period_ms, period_ms);
	}
	if (!period_ms)
		period_ms = DEFAULT_PERIOD_MS;
	for (size_t i = 0; i < cfg->n_devices; i++)
		probe_one(&pd[i], period_ms);

	size_t usable = 0;
	for (size_t i = 0; i < cfg->n_devices; i++)
		usable += pd[i].problems.n == 0;
	bool ok = usable == cfg->n_devices && cfg_problems.n == 0;
	if (as_json) {
		json_t *devs = json_array();
		for (size_t i = 0; i < cfg->n_devices; i++)
			json_array_append_new(devs, jdev(&pd[i]));
		json_t *o = json_pack("{s:s, s:s, s:I, s:b, s:I, s:I, s:o, s:o}", "config", cfg->path,
				      "node", cfg->node, "period_ms", (json_int_t)period_ms, "usable",
				      ok, "devices_usable", (json_int_t)usable, "devices_total",
				      (json_int_t)cfg->n_devices, "problems", jnotes(&cfg_problems),
				      "devices", devs);
		json_dumpf(o, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(o);
	} else {
		printf("config %s: node %s, %zu device(s), period %u ms\n", cfg->path,
		       cfg->node[0] ? cfg->node : "-", cfg->n_devices, period_ms);
		for (size_t i = 0; i < cfg->n_devices; i++)
			print_dev(stdout, &pd[i]);
		printf("\n");
		for (size_t i = 0; i < cfg_problems.n; i++)
			printf("PROBLEM %s\n", cfg_problems.v[i]);
		printf("probe: %zu of %zu device(s) usable%s\n", usable, cfg->n_devices,
		       ok ? "" : "; problems above");
	}
	for (size_t i = 0; i < cfg->n_devices; i++)
		policy_free(pols[i]);
	free(pd);
	config_free(cfg);
	return ok ? GOVCTL_EXIT_OK : GOVCTL_EXIT_FAIL;
}
