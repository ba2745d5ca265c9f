/* govd config loader: a full file, defaults, relative paths, and every
 * error with its line:col and key path; reloadability. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "governor/daemon/config.h"

static int load(const char *text, struct config **c, struct diag_list *d)
{
	return config_load_string("/etc/govd/govd.yaml", text, strlen(text), c, d);
}

/* The diag at line:col with path (any message) exists. */
static bool has(const struct diag_list *d, int line, const char *path, const char *code)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].line == line && !strcmp(d->v[i].path, path) &&
		    (!code || !strcmp(d->v[i].code, code)) && d->v[i].col > 0)
			return true;
	return false;
}

static const char good[] =
	"node: n1\n"
	"policy: policies/a.yaml\n"
	"budget_w: 1500\n"
	"log_level: info\n"
	"state_file: /var/lib/govd/s.json\n"
	"decision_log: {dir: log, max_bytes: 1000, keep: 2}\n"
	"metrics: {listen: \"127.0.0.1:9100\"}\n"
	"control: {socket: /run/govd/s.sock, mode: \"0640\", group: root, read: {groups: [0]}, operator: {users: [root, 4321]}}\n"
	"devices:\n"
	"  - name: gpu0\n"
	"    backend: sim\n"
	"    time_scale: 10\n"
	"    options: {scenario: s.yaml, seed: 3}\n"
	"  - name: gpu1\n"
	"    backend: nvml\n"
	"    policy: /abs/b.yaml\n"
	"    weight: 2.5\n"
	"    options: {index: 1}\n";

/* The node's name: the config's, else GOVD_NODE (the DaemonSet's
 * spec.nodeName), never one with a '/' (an etcd key separator). */
static void test_node_from_env(void **st)
{
	(void)st;
	static const char text[] =
		"devices:\n  - {name: gpu0, backend: sim, options: {scenario: s.yaml}}\n"
		"policy: p.yaml\n";
	struct diag_list d = { 0 };
	struct config *c;
	setenv("GOVD_NODE", "gpu-node-7", 1);
	assert_int_equal(load(text, &c, &d), 0);
	assert_string_equal(c->node, "gpu-node-7");
	config_free(c);
	diag_clear(&d);
	assert_int_equal(load(good, &c, &d), 0);
	assert_string_equal(c->node, "n1"); /* the config's wins */
	config_free(c);
	diag_clear(&d);
	setenv("GOVD_NODE", "a/b", 1);
	assert_int_equal(load(text, &c, &d), 0);
	assert_string_equal(c->node, "");
	config_free(c);
	diag_clear(&d);
	unsetenv("GOVD_NODE");
	assert_int_equal(load(text, &c, &d), 0);
	assert_string_equal(c->node, "");
	config_free(c);
	diag_clear(&d);
}

static void test_good(void **st)
{
	struct diag_list d = { 0 };
	struct config *c;
	assert_int_equal(load(good, &c, &d), 0);
	assert_int_equal(diag_count(&d, DIAG_ERROR), 0);
	assert_string_equal(c->node, "n1");
	assert_true(c->budget_w == 1500);
	assert_int_equal(c->log_level, LOG_INFO);
	assert_string_equal(c->declog.dir, "/etc/govd/log"); /* relative to the config */
	assert_int_equal(c->declog.max_bytes, 1000);
	assert_int_equal(c->declog.keep, 2);
	assert_string_equal(c->metrics.listen, "127.0.0.1:9100");
	assert_true(c->metrics.enabled);
	assert_int_equal(c->control.mode, 0640);
	assert_int_equal(c->control.group, 0);
	assert_int_equal(c->control.acl.read.n_gids, 1);
	assert_int_equal(c->control.acl.read.gids[0], 0);
	assert_int_equal(c->control.acl.op.n_uids, 2);
	assert_int_equal(c->control.acl.op.uids[0], 0);
	assert_int_equal(c->control.acl.op.uids[1], 4321);
	assert_int_equal(c->n_devices, 2);
	assert_string_equal(c->dev[0].policy_path, "/etc/govd/policies/a.yaml");
	assert_string_equal(c->dev[1].policy_path, "/abs/b.yaml");
	assert_true(c->dev[0].time_scale == 10);
	assert_true(c->dev[1].weight == 2.5);
	assert_true(c->dev[0].weight == 1.0);
	assert_int_equal(c->dev[0].n_opts, 2);
	assert_string_equal(c->dev[0].keys[1], "seed");
	assert_string_equal(c->dev[0].values[1], "3"); /* verbatim text */
	struct hal_dev_cfg hc;
	config_dev_cfg(&c->dev[0], &hc);
	assert_string_equal(hc.backend, "sim");
	assert_int_equal(hc.n_opts, 2);
	assert_string_equal(hc.values[0], "s.yaml");
	config_free(c);
	diag_clear(&d);
}

static void test_defaults(void **st)
{
	struct diag_list d = { 0 };
	struct config *c;
	assert_int_equal(load("policy: p.yaml\ndevices: [{name: a, backend: sim}]\n", &c, &d), 0);
	assert_string_equal(c->state_file, CONFIG_DEFAULT_STATE_FILE);
	assert_string_equal(c->declog.dir, CONFIG_DEFAULT_LOG_DIR);
	assert_string_equal(c->metrics.listen, "127.0.0.1:9464");
	assert_int_equal(c->control.group, (gid_t)-1);
	assert_int_equal(c->control.acl.op.n_uids, 0); /* nobody is implicit */
	assert_int_equal(c->control.mode, 0660);
	assert_false(c->dry_run);
	assert_true(c->budget_w == 0);
	config_free(c);
	diag_clear(&d);
}

static void test_errors_located(void **st)
{
	static const char bad[] =
		"polcy: p.yaml\n"                          /* 1 unknown key */
		"budget_w: -5\n"                           /* 2 range */
		"control: {mode: \"999\", read: {users: [no-such-user-xq]}}\n" /* 3 mode, user */
		"devices:\n"
		"  - name: gpu0\n"                         /* 5 no policy anywhere */
		"    backend: cuda\n"                      /* 6 unknown backend */
		"  - name: gpu0\n"                         /* 7 duplicate name */
		"    backend: nvml\n"
		"    policy: q.yaml\n"
		"    time_scale: 2\n"                      /* 10 sim only */
		"    options: {index: 1, index: 2, x: [1]}\n"; /* 11 duplicate option, non-scalar */
	struct diag_list d = { 0 };
	struct config *c = (struct config *)1;
	assert_int_equal(load(bad, &c, &d), -EINVAL);
	assert_null(c);
	diag_print(&d, stdout);
	assert_true(has(&d, 1, "polcy", "unknown-key"));
	assert_true(has(&d, 2, "budget_w", NULL));
	assert_true(has(&d, 3, "control.mode", "range"));
	assert_true(has(&d, 3, "control.read.users", "unknown-name"));
	assert_true(has(&d, 5, "devices[0].policy", "missing-key"));
	assert_true(has(&d, 6, "devices[0].backend", NULL));
	assert_true(has(&d, 7, "devices[1].name", "duplicate-name"));
	assert_true(has(&d, 10, "devices[1].time_scale", "sim-only"));
	assert_true(has(&d, 11, "devices[1].options.index", "duplicate-key"));
	assert_true(has(&d, 11, "devices[1].options.x", "type"));
	/* the unknown backend's message lists the valid ones */
	bool listed = false;
	for (size_t i = 0; i < d.n; i++)
		listed |= strstr(d.v[i].msg, "cuda") && strstr(d.v[i].msg, "nvml");
	assert_true(listed);
	diag_clear(&d);
}

static void test_no_devices_and_syntax(void **st)
{
	struct diag_list d = { 0 };
	struct config *c;
	assert_int_equal(load("policy: p.yaml\n", &c, &d), -EINVAL);
	assert_true(d.n >= 1);
	assert_string_equal(d.v[0].path, "devices");
	diag_clear(&d);
	assert_int_equal(load("devices: [\n", &c, &d), -EINVAL);
	assert_true(d.n >= 1 && d.v[0].line >= 1);
	diag_clear(&d);
	assert_int_equal(config_load("/nonexistent/govd.yaml", &c, &d), -ENOENT);
	assert_non_null(strstr(d.v[0].file, "/nonexistent/govd.yaml"));
	diag_clear(&d);
}

static void test_reloadable(void **st)
{
	struct diag_list d = { 0 };
	struct config *a, *b;
	char why[256];
	assert_int_equal(load(good, &a, &d), 0);
	/* policy and budget may change */
	char text[sizeof(good) + 64];
	snprintf(text, sizeof(text), "%s", good);
	char *p = strstr(text, "budget_w: 1500");
	memcpy(p, "budget_w: 1200", 14);
	p = strstr(text, "policy: /abs/b.yaml");
	memcpy(p, "policy: /abs/c.yaml", 19);
	assert_int_equal(load(text, &b, &d), 0);
	assert_true(config_reloadable(a, b, why, sizeof(why)));
	config_free(b);
	/* a device option may not */
	snprintf(text, sizeof(text), "%s", good);
	p = strstr(text, "index: 1");
	p[7] = '7';
	assert_int_equal(load(text, &b, &d), 0);
	assert_false(config_reloadable(a, b, why, sizeof(why)));
	assert_non_null(strstr(why, "gpu1"));
	config_free(b);
	config_free(a);
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_node_from_env),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_errors_located),
		cmocka_unit_test(test_no_devices_and_syntax),
		cmocka_unit_test(test_reloadable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
