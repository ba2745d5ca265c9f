/* The config's fleet section (governor/fleet/fleet_cfg.c): a full one, defaults,
 * every error with line:col and key path, and a change refusing a reload. */
#define _GNU_SOURCE /* mkdtemp */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* fleet.auth: the password file judged at load (regular, readable,
 * non-empty first line, not too long), never kept; a user needs a file. */
static void test_auth(void **st)
{
	(void)st;
	char dir[] = "/tmp/govd-auth-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char good[64], empty[64], longp[64], fifo[64], text[512], pw[256], err[256];
	snprintf(good, sizeof(good), "%s/good", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	snprintf(longp, sizeof(longp), "%s/long", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	FILE *f = fopen(good, "w");
	fputs("s3cret\nsecond line ignored\n", f);
	fclose(f);
	fclose(fopen(empty, "w"));
	f = fopen(longp, "w");
	for (int i = 0; i < 300; i++)
		fputc('x', f);
	fclose(f);
	assert_int_equal(mkfifo(fifo, 0600), 0);

	assert_int_equal(fleet_read_password(good, pw, sizeof(pw), err, sizeof(err)), 0);
	assert_string_equal(pw, "s3cret");
	assert_int_equal(fleet_read_password(empty, pw, sizeof(pw), err, sizeof(err)), -EINVAL);
	assert_int_equal(fleet_read_password(longp, pw, sizeof(pw), err, sizeof(err)), -E2BIG);
	assert_string_equal(pw, ""); /* nothing of it left behind */
	/* a FIFO would block the load: refused without opening it */
	assert_int_equal(fleet_read_password(fifo, pw, sizeof(pw), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));

	struct diag_list d = { 0 };
	struct config *c;
	const char *bad[] = { "/nonexistent/pw", empty, longp, fifo };
	for (size_t i = 0; i < 4; i++) {
		snprintf(text, sizeof(text),
			 "fleet:\n  endpoints: [\"https://e:2379\"]\n  group: g\n  safe_budget_w: 100\n"
			 "  auth: {user: govd, password_file: %s}\n", bad[i]);
		assert_int_equal(load(text, &c, &d), -EINVAL);
		assert_true(has(&d, 8, "fleet.auth.password_file"));
		diag_clear(&d);
	}
	/* a user without its password file, an unknown key */
	assert_int_equal(load("fleet:\n  endpoints: [\"https://e:2379\"]\n  group: g\n"
			      "  safe_budget_w: 100\n  auth: {user: govd, token: x}\n",
			      &c, &d),
			 -EINVAL);
	assert_true(has(&d, 8, "fleet.auth.password_file"));
	assert_true(has(&d, 8, "fleet.auth.token"));
	diag_clear(&d);
	snprintf(text, sizeof(text),
		 "fleet:\n  endpoints: [\"https://e:2379\"]\n  group: g\n  safe_budget_w: 100\n"
		 "  auth: {user: govd, password_file: %s}\n", good);
	assert_int_equal(load(text, &c, &d), 0);
	assert_string_equal(c->fleet.auth_user, "govd");
	assert_string_equal(c->fleet.auth_password_file, good);
	assert_int_equal(d.n, 0); /* https: no cleartext warning */
	config_free(c);
	diag_clear(&d);
	unlink(good);
	unlink(empty);
	unlink(longp);
	unlink(fifo);
	rmdir(dir);
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
		cmocka_unit_test(test_auth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
