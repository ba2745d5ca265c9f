/* governor/fleet/fleet_etcd.c without a server: base64 both ways (seeded random
 * round trips, bad input), endpoint parsing, and a dead endpoint failing
 * in bounded time with its URL in the error. The real cluster is
 * tests/integration/fleet_etcd.sh. */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/rng.h"
#include "governor/fleet/fleet.h"
#include "governor/fleet/fleet_etcd.h"

static void test_b64(void **st)
{
	(void)st;
	char out[64];
	unsigned char dec[64];
	etcd_b64_encode("/govd/a", 7, out);
	assert_string_equal(out, "L2dvdmQvYQ==");
	assert_int_equal(etcd_b64_decode("L2dvdmQvYQ==", dec), 7);
	assert_string_equal((char *)dec, "/govd/a");
	etcd_b64_encode("", 0, out);
	assert_string_equal(out, "");
	const char *bad[] = { "abc", "a===", "ab=c", "@@@@", "YQ==YQ==", NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_equal(etcd_b64_decode(bad[i], dec), -1);
	uint64_t seed = getenv("GOVD_TEST_SEED") ? strtoull(getenv("GOVD_TEST_SEED"), NULL, 0) : 19;
	printf("seed %llu (GOVD_TEST_SEED)\n", (unsigned long long)seed);
	struct rng r;
	rng_seed(&r, seed);
	for (int t = 0; t < 2000; t++) {
		unsigned char in[40], back[64];
		char enc[64];
		size_t n = rng_u64(&r) % sizeof(in);
		for (size_t i = 0; i < n; i++)
			in[i] = (unsigned char)rng_u64(&r);
		etcd_b64_encode(in, n, enc);
		assert_int_equal(etcd_b64_decode(enc, back), (long)n);
		assert_memory_equal(in, back, n);
	}
}

static void test_endpoints(void **st)
{
	(void)st;
	struct etcd e;
	assert_int_equal(etcd_init(&e, "http://a:1,https://b:2/", 100), 0);
	assert_int_equal(e.n_ep, 2);
	assert_string_equal(e.ep[1], "https://b:2");
	assert_int_equal(etcd_init(&e, "", 100), -EINVAL);
	assert_int_equal(etcd_init(&e, "file:///x", 100), -EINVAL);
	assert_non_null(strstr(e.err, "file:///x"));
	assert_int_equal(etcd_init(&e, "http://1,http://2,http://3,http://4,http://5,http://6,"
				       "http://7,http://8,http://9",
				   100),
			 -EINVAL);
}

/* A port nobody listens on: bound, then closed. */
static int dead_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	getsockname(s, (struct sockaddr *)&a, &l);
	close(s);
	return ntohs(a.sin_port);
}

static void test_dead_endpoint(void **st)
{
	(void)st;
	struct etcd e;
	char ep[128];
	struct etcd_kv kv;
	int found = 1;
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d,http://127.0.0.1:%d", dead_port(), dead_port());
	assert_int_equal(etcd_init(&e, ep, 200), 0);
	uint64_t t0 = govd_mono_ms();
	assert_int_equal(etcd_get(&e, "/govd/x", &kv, &found, NULL), -EIO);
	assert_int_equal(found, 0);
	assert_true(govd_mono_ms() - t0 < 5000); /* bounded: no hang, not a speed target */
	assert_non_null(strstr(e.err, "127.0.0.1"));
	struct fleet_view v;
	assert_int_equal(fleet_view_read(&e, "/govd/c/g", &v), -EIO);
	etcd_fini(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_dead_endpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
