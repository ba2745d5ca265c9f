/* The daemon on sim devices, ticked directly (no timer): state file before
 * the first write and gone after the restore, the node budget honoured,
 * dry run writes nothing, SIGHUP's reload is a transaction, a state file
 * left by a crash is restored at start. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "governor/daemon/daemon.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"

#ifdef GOVD_WITH_GPIOD
#include "tests/unit/fake_gpio.h"
#endif

#define POLICY GOVD_SOURCE_DIR "/policies/thermal-conservative.yaml"
#define SCENARIO GOVD_SOURCE_DIR "/configs/scenarios/default.yaml"

static char dir[] = "/tmp/test_daemon_XXXXXX";
static char cfg_path[256], state_path[256], log_dir[256], pol_path[256];

static struct governor_status gstat(const struct governor *g)
{
	struct governor_status s;
	governor_status(g, &s);
	return s;
}

static int setup(void **st)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(cfg_path, sizeof(cfg_path), "%s/govd.yaml", dir);
	snprintf(state_path, sizeof(state_path), "%s/state.json", dir);
	snprintf(log_dir, sizeof(log_dir), "%s/log", dir);
	snprintf(pol_path, sizeof(pol_path), "%s/p.yaml", dir);
	log_init(LOG_ERR, NULL);
	return 0;
}

static int teardown(void **st)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_cfg(const char *policy, double budget_w, bool dry, const char *extra)
{
	FILE *f = fopen(cfg_path, "w");
	assert_non_null(f);
	fprintf(f,
		"policy: %s\nbudget_w: %g\ndry_run: %s\nstate_file: %s\n"
		"decision_log: {dir: %s, max_bytes: 0}\n"
		"metrics: {listen: \"127.0.0.1:0\"}\n"
		"control: {socket: %s/ctl.sock, read: {users: [%u]}, operator: {users: [%u]}}\n"
		"devices:\n"
		"  - {name: gpu0, backend: sim, time_scale: 100, options: {scenario: %s, seed: 1}}\n"
		"  - {name: gpu1, backend: sim, time_scale: 100, weight: 2, options: {scenario: %s, seed: %s}}\n",
		policy, budget_w, dry ? "true" : "false", state_path, log_dir, dir, (unsigned)getuid(),
		(unsigned)getuid(), SCENARIO, SCENARIO,
		extra ? extra : "2");
	fclose(f);
}

static void copy_policy(const char *from, const char *sed_from, const char *sed_to)
{
	FILE *in = fopen(from, "r"), *out = fopen(pol_path, "w");
	assert_non_null(in);
	assert_non_null(out);
	char line[512];
	while (fgets(line, sizeof(line), in)) {
		char *p = sed_from ? strstr(line, sed_from) : NULL;
		if (p)
			fprintf(out, "%.*s%s\n", (int)(p - line), line, sed_to);
		else
			fputs(line, out);
	}
	fclose(in);
	fclose(out);
}

static void run_ticks(struct daemon *d, int n)
{
	for (int i = 0; i < n; i++) {
		usleep(2000); /* pacing only: x100 time scale -> ~0.2 s of plant per tick */
		assert_int_equal(daemon_tick(d), 0);
	}
}

static void test_budget_state_restore(void **st)
{
	struct daemon d;
	struct diag_list dl = { 0 };
	write_cfg(POLICY, 700, false, NULL);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), 0);
	assert_int_equal(diag_count(&dl, DIAG_ERROR), 0);
	assert_int_equal(d.n, 2);
	assert_int_equal(d.plan.period_ms, 100);
	assert_int_equal(access(state_path, F_OK), 0); /* before the first write */
	uint32_t floors = governor_limits(d.dev[0].g)->power_limit_min_mw + governor_limits(d.dev[1].g)->power_limit_min_mw;
	assert_true(floors <= 700000);
	run_ticks(&d, 20);
	uint64_t sum = 0;
	for (size_t i = 0; i < d.n; i++) {
		sum += governor_point(d.dev[i].g)->power_limit_mw;
		/* the plant really runs at what the governor set */
		struct plant *pl = hal_sim_plant(&d.dev[i].hw);
		assert_int_equal((uint32_t)(pl->dev.power_limit_w * 1000.0 + 0.5),
				 governor_point(d.dev[i].g)->power_limit_mw);
		assert_true(d.dev[i].grant_mw > 0);
	}
	assert_true(sum <= 700000);
	assert_true((uint64_t)d.dev[0].grant_mw + d.dev[1].grant_mw <= 700000);
	assert_int_equal(d.st.ticks, 20);
	assert_int_equal(d.st.tick_ms.n, 20);
	/* the metrics snapshot follows every period of every device */
	assert_non_null(d.snap);
	assert_int_equal(d.snap->n_devices, 2);
	assert_int_equal(d.snap->dev[1].periods, 20);
	assert_int_equal(d.snap->tick.count, 20);
	assert_true(d.snap->node_budget_w == 700.0);
	assert_true(d.snap->dev[0].power_limit_w * 1000.0 == (double)governor_point(d.dev[0].g)->power_limit_mw);
	assert_true(metrics_port(d.msrv) > 0);
	assert_non_null(d.cs);

	assert_int_equal(daemon_restore_all(&d), 0);
	assert_true(access(state_path, F_OK) != 0);
	for (size_t i = 0; i < d.n; i++) {
		struct plant *pl = hal_sim_plant(&d.dev[i].hw);
		assert_true(pl->dev.power_limit_w == 700.0); /* the original */
	}
	daemon_fini(&d);
	char lp[300];
	snprintf(lp, sizeof(lp), "%s/gpu1.jsonl", log_dir);
	FILE *f = fopen(lp, "r");
	assert_non_null(f);
	char line[8192], last[8192] = "";
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		snprintf(last, sizeof(last), "%s", line);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 22); /* header, 20 decisions, restore */
	assert_non_null(strstr(last, "\"type\":\"restore\""));
	diag_clear(&dl);
}

static void test_dry_run_writes_nothing(void **st)
{
	struct daemon d;
	struct diag_list dl = { 0 };
	write_cfg(POLICY, 0, false, NULL);
	assert_int_equal(daemon_init(&d, cfg_path, true, NULL, &dl), 0);
	assert_true(d.dry_run);
	assert_true(access(state_path, F_OK) != 0); /* nothing to protect */
	run_ticks(&d, 5);
	/* the policy caps the limit at 550 W: decided, not applied */
	assert_int_equal(governor_point(d.dev[0].g)->power_limit_mw, 550000);
	assert_true(hal_sim_plant(&d.dev[0].hw)->dev.power_limit_w == 700.0);
	assert_true(governor_point(d.dev[0].g)->clk_locked);
	assert_int_equal(daemon_restore_all(&d), 0);
	daemon_fini(&d);
	/* the decision log says it is a dry run (docs/decision-log.md) */
	char lp[300], line[8192] = "";
	snprintf(lp, sizeof(lp), "%s/gpu0.jsonl", log_dir);
	FILE *f = fopen(lp, "r");
	assert_non_null(f);
	char header[8192] = ""; /* this run's: the log may hold an earlier one */
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "\"type\":\"header\""))
			snprintf(header, sizeof(header), "%s", line);
	fclose(f);
	assert_non_null(strstr(header, "\"dry_run\":true"));
	diag_clear(&dl);
}

static void test_reload_transaction(void **st)
{
	struct daemon d;
	struct diag_list dl = { 0 };
	copy_policy(POLICY, NULL, NULL);
	write_cfg(pol_path, 0, false, NULL);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), 0);
	run_ticks(&d, 3);
	char hash0[32];
	snprintf(hash0, sizeof(hash0), "%s", governor_policy(d.dev[0].g)->hash_hex);
	uint32_t orig = gstat(d.dev[0].g).orig_power_limit_mw;

	/* good: a lower cap; the device's originals carry over */
	copy_policy(POLICY, "cap_w:", "cap_w: 500");
	assert_int_equal(daemon_reload(&d, &dl), 0);
	assert_string_not_equal(governor_policy(d.dev[0].g)->hash_hex, hash0);
	assert_int_equal(gstat(d.dev[0].g).orig_power_limit_mw, orig);
	assert_true(gstat(d.dev[0].g).started);
	run_ticks(&d, 3);
	assert_true(governor_point(d.dev[0].g)->power_limit_mw <= 500000);
	char hash1[32];
	snprintf(hash1, sizeof(hash1), "%s", governor_policy(d.dev[0].g)->hash_hex);
	const struct governor *g1 = d.dev[0].g;

	/* bad policy: refused, located, old one kept */
	FILE *f = fopen(pol_path, "w");
	fputs("name: broken\ncontrol:\n  controller: turbo\n", f);
	fclose(f);
	assert_int_equal(daemon_reload(&d, &dl), -EINVAL);
	assert_true(diag_count(&dl, DIAG_ERROR) >= 1);
	bool located = false;
	for (size_t i = 0; i < dl.n; i++)
		located |= dl.v[i].sev == DIAG_ERROR && !strcmp(dl.v[i].file, pol_path) &&
			   dl.v[i].line == 3;
	assert_true(located);
	assert_ptr_equal(d.dev[0].g, g1);
	assert_string_equal(governor_policy(d.dev[0].g)->hash_hex, hash1);
	diag_clear(&dl);
	run_ticks(&d, 2);

	/* a device change cannot be reloaded */
	copy_policy(POLICY, NULL, NULL);
	write_cfg(pol_path, 0, false, "9");
	assert_int_equal(daemon_reload(&d, &dl), -EINVAL);
	assert_ptr_equal(d.dev[0].g, g1);
	located = false; /* at the changed entry: devices[1], line 10 */
	for (size_t i = 0; i < dl.n; i++)
		located |= !strcmp(dl.v[i].code, "not-reloadable") && dl.v[i].line == 10 &&
			   dl.v[i].col > 0;
	assert_true(located);
	diag_clear(&dl);
	/* periods differ between devices: refused */
	FILE *c = fopen(cfg_path, "a");
	fprintf(c, "  - {name: gpu2, backend: sim, policy: %s/policies/balanced.yaml, options: {scenario: %s}}\n",
		GOVD_SOURCE_DIR, SCENARIO);
	fclose(c);
	assert_int_equal(daemon_reload(&d, &dl), -EINVAL);
	located = false;
	for (size_t i = 0; i < dl.n; i++)
		located |= !strcmp(dl.v[i].code, "period-mismatch") && dl.v[i].line == 11;
	assert_true(located);
	diag_clear(&dl);
	assert_int_equal(daemon_restore_all(&d), 0);
	daemon_fini(&d);
}

/* What an operator pinned stays pinned across a reload: govctl hold (the new
 * governors start held, the point stays) and --log-level (the config's
 * log_level does not replace it). */
static void test_reload_keeps_hold_and_cli_level(void **st)
{
	struct daemon d;
	struct diag_list dl = { 0 };
	copy_policy(POLICY, NULL, NULL);
	write_cfg(pol_path, 0, false, NULL);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), 0);
	run_ticks(&d, 3);
	daemon_hold(&d, true);
	struct gov_opoint held = *governor_point(d.dev[0].g);
	d.log_level_cli_set = true;
	d.log_level_cli = LOG_INFO;

	/* the new policy lets the limit go higher (the guard still enforces a
	 * lower cap during a hold: a higher one shows the hold itself) */
	copy_policy(POLICY, "cap_w:", "cap_w: 650");
	assert_int_equal(daemon_reload(&d, &dl), 0);
	assert_true(d.held);
	for (size_t i = 0; i < d.n; i++)
		assert_true(gstat(d.dev[i].g).hold);
	run_ticks(&d, 3);
	assert_int_equal(governor_point(d.dev[0].g)->power_limit_mw, held.power_limit_mw);
	assert_int_equal(governor_point(d.dev[0].g)->clk_max_khz, held.clk_max_khz);

	/* the config says notice (the default); --log-level info still holds */
	char *buf = NULL;
	size_t len = 0;
	FILE *sink = open_memstream(&buf, &len);
	assert_non_null(sink);
	log_init(LOG_ERR, sink);
	assert_int_equal(daemon_reload(&d, &dl), 0);
	log_info("info-after-reload");
	log_fini();
	fclose(sink);
	assert_non_null(strstr(buf, "info-after-reload"));
	free(buf);
	log_init(LOG_ERR, NULL);

	daemon_hold(&d, false);
	run_ticks(&d, 5);
	assert_true(governor_point(d.dev[0].g)->power_limit_mw != held.power_limit_mw ||
		    governor_point(d.dev[0].g)->clk_max_khz != held.clk_max_khz);
	assert_int_equal(daemon_restore_all(&d), 0);
	daemon_fini(&d);
	diag_clear(&dl);
}

static void test_start_restores_leftover(void **st)
{
	struct daemon d;
	struct diag_list dl = { 0 };
	write_cfg(POLICY, 0, false, NULL);
	/* a run that "crashed": its state file stays */
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), 0);
	run_ticks(&d, 2);
	d.state_written = false; /* what a kill -9 leaves: the file, not its removal */
	for (size_t i = 0; i < d.n; i++)
		governor_abandon(d.dev[i].g); /* what a kill -9 leaves */
	daemon_fini(&d);
	assert_int_equal(access(state_path, F_OK), 0);
	/* the next start restores it and writes its own */
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), 0);
	assert_int_equal(access(state_path, F_OK), 0);
	json_t *doc = json_load_file(state_path, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "pid")), getpid());
	json_decref(doc);
	assert_int_equal(daemon_restore_all(&d), 0);
	daemon_fini(&d);

	/* the device is reopened with the config's options, never the file's */
	FILE *f = fopen(state_path, "w");
	fputs("{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"gpu0\",\"backend\":\"sim\","
	      "\"options\":{\"scenario\":\"/nonexistent.yaml\"},\"original\":{\"generic\":true}}]}",
	      f);
	fclose(f);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), 0);
	assert_int_equal(daemon_restore_all(&d), 0);
	daemon_fini(&d);

	/* a leftover that cannot be restored (a device the config lacks) stops
	 * the start and stays */
	f = fopen(state_path, "w");
	fputs("{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"gpu9\",\"backend\":\"sim\","
	      "\"options\":{},\"original\":{\"generic\":true}}]}",
	      f);
	fclose(f);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), -EIO);
	assert_int_equal(access(state_path, F_OK), 0);
	diag_clear(&dl);

	/* a torn or damaged one: refused with where it broke, kept, no crash */
	f = fopen(state_path, "w");
	fputs("{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"gpu0\",\"back", f);
	fclose(f);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), -EINVAL);
	assert_int_equal(access(state_path, F_OK), 0);
	bool parse = false, says = false;
	for (size_t i = 0; i < dl.n; i++) {
		parse |= !strcmp(dl.v[i].code, "parse") && dl.v[i].line == 1 && dl.v[i].col > 0;
		says |= !strcmp(dl.v[i].code, "restore") && strstr(dl.v[i].msg, "cannot be used");
	}
	assert_true(parse);
	assert_true(says);
	diag_clear(&dl);
	/* a record whose limit is out of range reaches no device */
	f = fopen(state_path, "w");
	fprintf(f, "{\"format\":\"govd-state/1\",\"devices\":[{\"name\":\"gpu0\",\"backend\":"
		   "\"sim\",\"options\":{\"scenario\":\"%s\"},\"original\":{\"generic\":true,"
		   "\"power_limit_mw\":4295617296}}]}",
		SCENARIO);
	fclose(f);
	assert_int_equal(daemon_init(&d, cfg_path, false, NULL, &dl), -EIO);
	assert_int_equal(access(state_path, F_OK), 0);
	diag_clear(&dl);
	unlink(state_path);
}

#ifdef GOVD_WITH_GPIOD
/* The brake output follows the alert line: an asserted alert sends every
 * device to its safe point (an emergency record) and asserts the brake; a
 * cleared alert releases it; close leaves it at brake_safe. In a dry run the
 * brake is never driven. */
static void alert_brake_run(bool dry)
{
	memset(lines, 0, sizeof(lines));
	memset(init_level, 0, sizeof(init_level));
	hal_gpio_set_line_provider(&fake);
	char lp[300], line[16384];
	snprintf(lp, sizeof(lp), "%s/gpu0.jsonl", log_dir);
	unlink(lp); /* the log appends: count this run's records only */
	FILE *f = fopen(cfg_path, "w");
	assert_non_null(f);
	fprintf(f,
		"policy: %s\ndry_run: %s\nstate_file: %s\n"
		"decision_log: {dir: %s, max_bytes: 0}\n"
		"devices:\n"
		"  - {name: gpu0, backend: sim, time_scale: 100, options: {scenario: %s, seed: 1}}\n"
		"  - {name: lines, backend: gpio,\n"
		"     options: {chip: %s, alert_line: 3, debounce_ms: 0, brake_line: 5}}\n",
		POLICY, dry ? "true" : "false", state_path, log_dir, SCENARIO, FAKE_CHIP);
	fclose(f);
	struct daemon d;
	struct diag_list dl = { 0 };
	int rc = daemon_init(&d, cfg_path, false, NULL, &dl);
	for (size_t i = 0; i < dl.n; i++) {
		char b[1024];
		diag_format(&dl.v[i], b, sizeof(b));
		print_message("%s\n", b);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(diag_count(&dl, DIAG_ERROR), 0);
	/* the node's policy runs the govd controller; the lines are observed */
	assert_string_equal(gstat(d.dev[0].g).controller, "govd");
	assert_string_equal(gstat(d.dev[1].g).controller, "firmware-default");
	struct fake_line *alert = line_at(3, false), *brake = line_at(5, true);
	assert_int_equal(brake->value, 0); /* requested at its safe level */
	run_ticks(&d, 3);
	daemon_handle_alerts(&d); /* nothing pending */
	assert_int_equal(brake->set_calls, 0);

	fake_edge(alert, 1, now_ns());
	daemon_handle_alerts(&d);
	assert_true(d.dev[1].alert_on);
	assert_int_equal(brake->value, dry ? 0 : 1);
	assert_int_equal(brake->set_calls, dry ? 0 : 1);
	assert_true(d.dev[1].brake_on); /* decided, also in a dry run */
	assert_int_equal(gstat(d.dev[0].g).emergencies, 1);
	run_ticks(&d, 2);
	daemon_handle_alerts(&d);
	assert_int_equal(brake->set_calls, dry ? 0 : 1); /* held, not rewritten */

	fake_edge(alert, 0, now_ns() + 1);
	daemon_handle_alerts(&d);
	assert_false(d.dev[1].alert_on);
	assert_false(d.dev[1].brake_on);
	assert_int_equal(brake->value, 0);
	assert_int_equal(brake->set_calls, dry ? 0 : 2);

	fake_edge(alert, 1, now_ns() + 2);
	daemon_handle_alerts(&d);
	assert_int_equal(brake->value, dry ? 0 : 1);
	assert_int_equal(daemon_restore_all(&d), 0);
	daemon_fini(&d);
	assert_true(brake->released);
	assert_int_equal(brake->value, 0); /* brake_safe: false */
	hal_gpio_set_line_provider(NULL);

	f = fopen(lp, "r");
	assert_non_null(f);
	int n_em = 0;
	while (fgets(line, sizeof(line), f))
		n_em += strstr(line, "\"emergency\":\"alert line asserted\"") != NULL;
	fclose(f);
	assert_int_equal(n_em, 2);
	diag_clear(&dl);
}

static void test_alert_drives_brake(void **st)
{
	alert_brake_run(false);
}

static void test_alert_brake_dry_run(void **st)
{
	alert_brake_run(true);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_state_restore),
		cmocka_unit_test(test_dry_run_writes_nothing),
		cmocka_unit_test(test_reload_transaction),
		cmocka_unit_test(test_reload_keeps_hold_and_cli_level),
		cmocka_unit_test(test_start_restores_leftover),
#ifdef GOVD_WITH_GPIOD
		cmocka_unit_test(test_alert_drives_brake),
		cmocka_unit_test(test_alert_brake_dry_run),
#endif
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
