/* Hardening, peers: the metrics endpoint against slow and idle local
 * clients (issue 12, item 6). Before the guard, 16 connections sending a
 * header byte every few seconds held MHD's connection limit and every
 * scrape failed; here 64 (and then 200) such connections are open while a
 * scrape must succeed, and a connection that drips forever is closed by
 * the whole-request deadline. Time bounds are the harness's (curl's
 * timeout, a loop bound), generous; the times seen are printed. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "common/clock.h"
#include "common/diag.h"
#include "governor/daemon/connguard.h"
#include "governor/daemon/metrics.h"

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	size_t *len = ud;
	(void)p;
	*len += sz * n;
	return sz * n;
}

/* One scrape with a generous bound (the harness's, not a speed target). */
static long scrape(unsigned port, size_t *len, double *took_s)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	CURL *c = curl_easy_init();
	assert_non_null(c);
	*len = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, len);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	uint64_t t0 = govd_mono_ms();
	CURLcode cc = curl_easy_perform(c);
	*took_s = (double)(govd_mono_ms() - t0) / 1e3;
	long code = 0;
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	else
		print_message("scrape: %s\n", curl_easy_strerror(cc));
	curl_easy_cleanup(c);
	return code;
}

static int connect_local(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Drips one header byte per connection every 200 ms (well inside MHD's
 * 10 s idle timer, which each byte resets). */
struct drip {
	int *fd;
	size_t n;
	volatile int stop;
	pthread_t thr;
};

static void *drip_main(void *arg)
{
	struct drip *d = arg;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	size_t pos = 0;
	while (!d->stop) {
		char ch = pos < sizeof(req) - 1 ? req[pos] : 'a';
		pos++;
		for (size_t i = 0; i < d->n; i++)
			if (d->fd[i] >= 0)
				(void)send(d->fd[i], &ch, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct timespec ts = { 0, 200 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static struct metrics_server *start(void)
{
	struct metrics_server *m;
	struct diag_list dl = { 0 };
	struct metrics_cfg cfg = { .listen = "127.0.0.1:0" };
	assert_int_equal(metrics_start(&m, &cfg, &dl), 0);
	diag_clear(&dl);
	return m;
}

static void slow_clients_then_scrape(size_t n)
{
	struct metrics_server *m = start();
	unsigned port = metrics_port(m);
	struct drip d = { .n = n };
	d.fd = calloc(n, sizeof(int));
	for (size_t i = 0; i < n; i++)
		d.fd[i] = connect_local(port);
	assert_int_equal(pthread_create(&d.thr, NULL, drip_main, &d), 0);
	/* let the server accept them all and the drips start */
	struct timespec ts = { 1, 0 };
	nanosleep(&ts, NULL);
	size_t len;
	double took;
	long code = scrape(port, &len, &took);
	print_message("%zu slow connections open: scrape HTTP %ld, %zu bytes in %.3f s\n", n, code, len,
		      took);
	assert_int_equal(code, 200);
	assert_true(len > 100);
	/* and again: the guard keeps serving while they drip */
	code = scrape(port, &len, &took);
	print_message("second scrape HTTP %ld in %.3f s\n", code, took);
	assert_int_equal(code, 200);
	struct connguard_stats st;
	metrics_conn_stats(m, &st);
	print_message("guard: opened %llu evicted per peer %llu in all %llu expired %llu open %u\n",
		      (unsigned long long)st.opened, (unsigned long long)st.evicted_peer,
		      (unsigned long long)st.evicted_total, (unsigned long long)st.expired, st.open);
	assert_true(st.open <= METRICS_CONN_MAX);
	assert_true(st.evicted_peer > 0); /* all from 127.0.0.1: the per-peer bound held */
	d.stop = 1;
	pthread_join(d.thr, NULL);
	for (size_t i = 0; i < n; i++)
		close(d.fd[i]);
	free(d.fd);
	metrics_stop(m);
}

static void test_64_slow_connections(void **state)
{
	(void)state;
	slow_clients_then_scrape(64);
}

static void test_200_slow_connections(void **state)
{
	(void)state;
	slow_clients_then_scrape(200);
}

/* One client dripping forever is closed by the whole-request deadline
 * (an idle timer reset by each byte never fires). */
static void test_drip_forever_is_closed(void **state)
{
	(void)state;
	struct metrics_server *m = start();
	int fd = connect_local(metrics_port(m));
	struct drip d = { .fd = &fd, .n = 1 };
	assert_int_equal(pthread_create(&d.thr, NULL, drip_main, &d), 0);
	uint64_t t0 = govd_mono_ms();
	bool closed = false;
	/* harness bound: 6x the deadline */
	while (!closed && govd_mono_ms() - t0 < 6 * METRICS_REQUEST_DEADLINE_MS) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) > 0) {
			char b[256];
			ssize_t r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
			closed = r == 0 || (r < 0 && errno != EAGAIN);
		}
	}
	print_message("dripping connection closed after %.2f s (deadline %d ms)\n",
		      (double)(govd_mono_ms() - t0) / 1e3, METRICS_REQUEST_DEADLINE_MS);
	d.stop = 1;
	pthread_join(d.thr, NULL);
	assert_true(closed);
	struct connguard_stats st;
	metrics_conn_stats(m, &st);
	assert_true(st.expired >= 1);
	close(fd);
	metrics_stop(m);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_64_slow_connections),
		cmocka_unit_test(test_200_slow_connections),
		cmocka_unit_test(test_drip_forever_is_closed),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
