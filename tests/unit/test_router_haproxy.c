/* Unit tests for hal/router_haproxy's parsers: `show servers state` as
 * HAProxy 2.6 answers it (captured from Debian 12's haproxy 2.6.12), the
 * columns found by name, and malformed answers; `show info`'s Pid and
 * Uptime_sec. The socket side runs against a real HAProxy
 * (tests/integration/haproxy_router.sh). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hal/router_haproxy.h"

#define HDR "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight " \
	    "srv_iweight srv_time_since_last_change srv_check_status srv_check_result "           \
	    "srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "     \
	    "srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr "              \
	    "srv_agent_addr srv_agent_port\n"

static const char REAL[] = "1\n" HDR
	"3 code 1 bf16 127.0.0.1 2 0 100 100 1 1 0 2 0 0 0 0 - 18481 - 0 0 - - 0\n"
	"3 code 2 fp8 127.0.0.1 2 0 30 0 1 1 0 2 0 0 0 0 - 18482 - 0 0 - - 0\n\n";

static int parse(const char *t, struct hap_server_row *r, size_t max, size_t *n, char *err)
{
	return hap_parse_servers_state(t, strlen(t), r, max, n, err, 160);
}

static void test_real_answer(void **st)
{
	struct hap_server_row r[4];
	size_t n;
	char err[160];
	assert_int_equal(parse(REAL, r, 4, &n, err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(r[0].backend, "code");
	assert_string_equal(r[0].server, "bf16");
	assert_int_equal(r[0].uweight, 100);
	assert_string_equal(r[1].server, "fp8");
	assert_int_equal(r[1].uweight, 30); /* uweight, not iweight (0) */
}

static void test_columns_by_name(void **st)
{
	/* another release's column order: found by the header, not by position */
	const char *t = "1\n# srv_uweight srv_name be_name\n7 lo be\n";
	struct hap_server_row r[2];
	size_t n;
	char err[160];
	assert_int_equal(parse(t, r, 2, &n, err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(r[0].backend, "be");
	assert_string_equal(r[0].server, "lo");
	assert_int_equal(r[0].uweight, 7);
	/* an empty backend: header only */
	assert_int_equal(parse("1\n# be_name srv_name srv_uweight\n\n", r, 2, &n, err), 0);
	assert_int_equal(n, 0);
}

static void test_malformed(void **st)
{
	struct hap_server_row r[1];
	size_t n;
	char err[160];
	static const char *const bad[] = {
		"",                                         /* nothing */
		"No such backend.\n\n",                     /* HAProxy's refusal, not a table */
		"2\n" HDR,                                  /* another format version */
		"1\n",                                      /* no header */
		"1\n3 code 1 bf16\n",                       /* a row before the header */
		"1\n# be_id be_name srv_id srv_name\n",    /* no srv_uweight column */
		"1\n" HDR "3 code 1 bf16 127.0.0.1 2 0 100\n", /* a short row */
		"1\n" HDR "3 code 1 bf16 127.0.0.1 2 0 x 100 1 1 0 2 0 0 0 0 - 1 - 0 0 - - 0\n",
		"1\n" HDR "3 code 1 bf16 127.0.0.1 2 0 257 0 1 1 0 2 0 0 0 0 - 1 - 0 0 - - 0\n",
		"1\n" HDR "3 code 1 bf16 127.0.0.1 2 0 -1 0 1 1 0 2 0 0 0 0 - 1 - 0 0 - - 0\n",
		"1\n" HDR "3 code 1 bf16 127.0.0.1 2 0 9999999999999999999999 0 1 1 0 2 0 0 0 0 - 1 - 0 0 - - 0\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse(bad[i], r, 1, &n, err), -EBADMSG);
		assert_true(err[0] != '\0');
	}
	/* more rows than room */
	assert_int_equal(parse(REAL, r, 1, &n, err), -E2BIG);
	/* a line longer than any real one */
	char longl[4000] = "1\n# be_name srv_name srv_uweight\n";
	size_t o = strlen(longl);
	memset(longl + o, 'a', 3000);
	longl[o + 3000] = '\0';
	assert_int_equal(parse(longl, r, 1, &n, err), -EBADMSG);
	/* not NUL terminated: the length bounds it */
	assert_int_equal(hap_parse_servers_state(REAL, 40, r, 1, &n, err, sizeof(err)), -EBADMSG);
}

static void test_info(void **st)
{
	const char *t = "Name: HAProxy\nVersion: 2.6.12-1+deb12u4\nPid: 28217\nUptime: 0d 0h00m00s\n"
			"Uptime_sec: 42\nMemmax_MB: 0\n";
	long pid = 0;
	uint64_t up = 0;
	assert_int_equal(hap_parse_info(t, strlen(t), &pid, &up), 0);
	assert_int_equal(pid, 28217);
	assert_int_equal(up, 42);
	const char *nopid = "Name: HAProxy\nUptime_sec: 1\n";
	assert_int_equal(hap_parse_info(nopid, strlen(nopid), &pid, &up), -EBADMSG);
	const char *badpid = "Pid: 12x\nUptime_sec: 1\n";
	assert_int_equal(hap_parse_info(badpid, strlen(badpid), &pid, &up), -EBADMSG);
	const char *negup = "Pid: 12\nUptime_sec: -1\n";
	assert_int_equal(hap_parse_info(negup, strlen(negup), &pid, &up), -EBADMSG);
}

static void test_bad_config(void **st)
{
	struct hap h;
	struct hap_cfg c = { .socket_path = "/nonexistent/haproxy.sock", .n_slices = 1,
			     .total_weight = 100, .max_step = 10,
			     .slice = { { "code", "bf16", "fp8" } } };
	c.slice[0].server_lo = "fp8 weight";
	assert_int_equal(hap_open(&h, &c), -EINVAL); /* a space would split the command */
	c.slice[0].server_lo = "fp8";
	c.total_weight = 300;
	assert_int_equal(hap_open(&h, &c), -EINVAL);
	c.total_weight = 100;
	/* two slices on one backend: each would steer the other's traffic */
	c.n_slices = 2;
	c.slice[1] = (struct hap_slice_cfg){ "code", "bf16", "fp8" };
	const char *key = NULL;
	char err[200];
	assert_int_equal(hap_cfg_check(&c, &key, err, sizeof(err)), -EINVAL);
	assert_string_equal(key, "haproxy_backends");
	assert_non_null(strstr(err, "share the backend 'code'"));
	c.slice[1].backend = "chat";
	assert_int_equal(hap_cfg_check(&c, &key, err, sizeof(err)), 0);
	c.n_slices = 1;
	assert_int_equal(hap_open(&h, &c), -ENOENT); /* no socket there */
	assert_non_null(strstr(h.err, "show info"));
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_real_answer), cmocka_unit_test(test_columns_by_name),
		cmocka_unit_test(test_malformed),   cmocka_unit_test(test_info),
		cmocka_unit_test(test_bad_config),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
