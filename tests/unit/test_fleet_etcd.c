/* governor/fleet/fleet_etcd.c without a server: base64 both ways (seeded random
 * round trips, bad input), endpoint parsing, and a dead endpoint failing
 * in bounded time with its URL in the error. The real cluster is
 * tests/integration/fleet_etcd.sh. */
#define _GNU_SOURCE /* strcasestr */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
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

/* A hostile or wrong endpoint: every request answered 200 with one range
 * reply whose key ("/g") is shorter than any prefix asked for. */
struct hostile {
	int fd;
	int answers;
};

static void *hostile_main(void *arg)
{
	struct hostile *h = arg;
	static const char body[] =
		"{\"header\":{\"revision\":\"5\"},\"count\":\"1\",\"kvs\":[{\"key\":\"L2c=\","
		"\"value\":\"e30=\",\"create_revision\":\"1\",\"mod_revision\":\"1\",\"lease\":\"7\"}]}";
	for (int i = 0; i < h->answers; i++) {
		int c = accept(h->fd, NULL, NULL);
		if (c < 0)
			break;
		char req[8192];
		size_t got = 0;
		/* headers, then the body's Content-Length bytes */
		for (;;) {
			ssize_t r = read(c, req + got, sizeof(req) - 1 - got);
			if (r <= 0)
				break;
			got += (size_t)r;
			req[got] = '\0';
			char *end = strstr(req, "\r\n\r\n");
			const char *cl = strcasestr(req, "content-length:");
			if (end && (!cl || got >= (size_t)(end + 4 - req) + strtoul(cl + 15, NULL, 10)))
				break;
		}
		char resp[1024];
		int n = snprintf(resp, sizeof(resp),
				 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				 strlen(body), body);
		(void)!write(c, resp, (size_t)n);
		close(c);
	}
	return NULL;
}

static void test_hostile_endpoint(void **st)
{
	(void)st;
	struct hostile h = { .answers = 4 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	h.fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(h.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(h.fd, 4), 0);
	getsockname(h.fd, (struct sockaddr *)&a, &l);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, hostile_main, &h), 0);

	struct etcd e;
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(a.sin_port));
	assert_int_equal(etcd_init(&e, ep, 2000), 0);
	/* under the prefix: the short key is refused, never sliced */
	struct etcd_kv *kvs = (struct etcd_kv *)1;
	size_t n = 9;
	assert_int_equal(etcd_get_prefix(&e, "/govd/c/g/nodes/", &kvs, &n, 16), -EPROTO);
	assert_null(kvs);
	assert_int_equal(n, 0);
	assert_non_null(strstr(e.err, "outside the prefix"));
	/* one key: a reply for another key is not this key's value */
	struct etcd_kv kv;
	int found = 1;
	assert_int_equal(etcd_get(&e, "/govd/c/g/budget", &kv, &found, NULL), -EPROTO);
	assert_int_equal(found, 0);
	assert_non_null(strstr(e.err, "another key"));
	/* what govctl fleet status reads: an error, not an overflow */
	struct fleet_view v;
	assert_int_equal(fleet_view_read(&e, "/govd/c/g", &v), -EIO);
	/* the node's one-snapshot read: the txn reply has no responses */
	const char *keys[] = { "/govd/c/g/leader" };
	int f1[1];
	assert_int_equal(etcd_get_many(&e, keys, 1, &kv, f1, NULL), -EPROTO);
	etcd_fini(&e);
	pthread_join(t, NULL);
	close(h.fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_dead_endpoint),
		cmocka_unit_test(test_hostile_endpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
