/* The config's fleet section (governor/fleet/fleet_cfg.c): a full one, defaults,
 * every error with line:col and key path, and a change refusing a reload. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "governor/daemon/config.h"

static const char head[] = "policy: p.yaml\n"
			   "devices:\n"
			   "  - {name: gpu0, backend: sim}\n";

static int load(const char *fleet, struct config **c, struct diag_list *d)
{
	char text[2048];
	snprintf(text, sizeof(text), "%s%s", head, fleet);
	return config_load_string("/etc/govd/govd.yaml", text, strlen(text), c, d);
}

static bool has(const struct diag_list *d, int line, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].line == line && !strcmp(d->v[i].path, path) && d->v[i].col > 0)
			return true;
	return false;
}

static void test_full_and_defaults(void **st)
{
	(void)st;
	struct diag_list d = { 0 };
	struct config *c;
	assert_int_equal(load("fleet:\n"
			      "  endpoints: [\"http://10.0.0.1:2379\", \"https://e2:2379\"]\n"
			      "  cluster: prod\n"
			      "  group: row-a.1\n"
			      "  priority: 3\n"
			      "  safe_budget_w: 300\n"
			      "  period_ms: 250\n"
			      "  allocator: true\n"
			      "  hysteresis: {up: 0.1, down: 0.2}\n",
			      &c, &d),
			 0);
	assert_true(c->fleet.enabled);
	assert_string_equal(c->fleet.endpoints, "http://10.0.0.1:2379,https://e2:2379");
	assert_string_equal(c->fleet.cluster, "prod");
	assert_string_equal(c->fleet.group, "row-a.1");
	assert_int_equal(c->fleet.priority, 3);
	assert_true(c->fleet.safe_budget_w == 300);
	assert_int_equal(c->fleet.period_ms, 250);
	assert_int_equal(c->fleet.lease_ttl_s, 5);
	assert_int_equal(c->fleet.grant_ttl_ms, 3000);
	assert_true(c->fleet.allocator);
	assert_true(c->fleet.up_frac == 0.1 && c->fleet.down_frac == 0.2);
	config_free(c);
	/* no section: off */
	assert_int_equal(load("", &c, &d), 0);
	assert_false(c->fleet.enabled);
	config_free(c);
	diag_clear(&d);
}

static void test_errors(void **st)
{
	(void)st;
	struct diag_list d = { 0 };
	struct config *c;
	/* line 4 is `fleet:` */
	assert_int_equal(load("fleet:\n"
			      "  endpoints: [\"file:///etc/passwd\"]\n"
			      "  group: \"a/b\"\n"
			      "  safe_budget_w: 0\n"
			      "  period_ms: 1000\n"
			      "  grant_ttl_ms: 1500\n"
			      "  floor_w: 500\n"
			      "  max_w: 400\n"
			      "  colour: red\n"
			      "  hysteresis: {up: 2}\n",
			      &c, &d),
			 -EINVAL);
	assert_null(c);
	diag_print(&d, stdout);
	assert_true(has(&d, 5, "fleet.endpoints[0]"));
	assert_true(has(&d, 6, "fleet.group"));
	assert_true(has(&d, 7, "fleet.safe_budget_w"));
	assert_true(has(&d, 9, "fleet.grant_ttl_ms"));
	assert_true(has(&d, 10, "fleet.floor_w"));
	assert_true(has(&d, 12, "fleet.colour"));
	assert_true(has(&d, 13, "fleet.hysteresis.up"));
	diag_clear(&d);
	/* required keys */
	assert_int_equal(load("fleet: {cluster: x}\n", &c, &d), -EINVAL);
	bool ep = false, gr = false, sb = false;
	for (size_t i = 0; i < d.n; i++) {
		ep |= !strcmp(d.v[i].path, "fleet.endpoints");
		gr |= !strcmp(d.v[i].path, "fleet.group");
		sb |= !strcmp(d.v[i].path, "fleet.safe_budget_w");
	}
	assert_true(ep && gr && sb);
	diag_clear(&d);
	assert_int_equal(load("fleet: [1]\n", &c, &d), -EINVAL);
	diag_clear(&d);
	/* 8 endpoints at 60 s each cannot meet a 3 s grant TTL: refused at
	 * timeout_ms (line 6), with the largest that can */
	assert_int_equal(load("fleet:\n"
			      "  endpoints: [\"http://a:1\", \"http://b:1\", \"http://c:1\", \"http://d:1\",\n"
			      "              \"http://e:1\", \"http://f:1\", \"http://g:1\", \"http://h:1\"]\n"
			      "  group: g\n"
			      "  timeout_ms: 60000\n"
			      "  safe_budget_w: 100\n",
			      &c, &d),
			 -EINVAL);
	diag_print(&d, stdout);
	assert_true(has(&d, 8, "fleet.timeout_ms"));
	assert_non_null(strstr(d.v[0].msg, "at most 312"));
	diag_clear(&d);
	/* three endpoints at 400 ms and a 500 ms period meet 3 s */
	assert_int_equal(load("fleet:\n"
			      "  endpoints: [\"http://a:1\", \"http://b:1\", \"http://c:1\"]\n"
			      "  group: g\n"
			      "  safe_budget_w: 100\n",
			      &c, &d),
			 0);
	config_free(c);
	diag_clear(&d);
}

/* fleet.tls: files must be there and readable; a certificate and its key go
 * together. */
static void test_tls(void **st)
{
	(void)st;
	struct diag_list d = { 0 };
	struct config *c;
	/* line 4 is `fleet:` */
	assert_int_equal(load("fleet:\n"
			      "  endpoints: [\"https://127.0.0.1:2379\"]\n"
			      "  group: g\n"
			      "  safe_budget_w: 100\n"
			      "  tls: {ca_file: /nonexistent/ca.pem, cert_file: /etc/passwd, colour: 1}\n",
			      &c, &d),
			 -EINVAL);
	assert_true(has(&d, 8, "fleet.tls.ca_file"));
	assert_true(has(&d, 8, "fleet.tls"));      /* cert without key */
	assert_true(has(&d, 8, "fleet.tls.colour"));
	diag_clear(&d);
	assert_int_equal(load("fleet:\n"
			      "  endpoints: [\"https://127.0.0.1:2379\"]\n"
			      "  group: g\n"
			      "  safe_budget_w: 100\n"
			      "  tls: {ca_file: /etc/passwd, cert_file: /etc/passwd, key_file: /etc/passwd}\n",
			      &c, &d),
			 0);
	assert_string_equal(c->fleet.tls_ca, "/etc/passwd");
	assert_string_equal(c->fleet.tls_key, "/etc/passwd");
	config_free(c);
	diag_clear(&d);
}

static void test_reload_refused(void **st)
{
	(void)st;
	struct diag_list d = { 0 };
	struct config *a, *b;
	const char *f1 = "fleet: {endpoints: [\"http://e:2379\"], group: g, safe_budget_w: 100}\n";
	const char *f2 = "fleet: {endpoints: [\"http://e:2379\"], group: g, safe_budget_w: 90}\n";
	char why[256];
	assert_int_equal(load(f1, &a, &d), 0);
	assert_int_equal(load(f1, &b, &d), 0);
	assert_true(config_reloadable(a, b, why, sizeof(why)));
	config_free(b);
	assert_int_equal(load(f2, &b, &d), 0);
	assert_false(config_reloadable(a, b, why, sizeof(why)));
	assert_non_null(strstr(why, "fleet"));
	config_free(a);
	config_free(b);
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_and_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_reload_refused),
		cmocka_unit_test(test_tls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
