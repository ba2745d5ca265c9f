/* Hardening, peers: the control socket against peers that flood it
 * (issue 12, item 8). Refusals used to log one warning per connection; a
 * read-role peer churning connections evicted an operator's connection
 * before its request was read. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "tests/unit/test_skip.h"

#include "common/diag.h"
#include "common/log.h"
#include "governor/daemon/ctlsock.h"

static int cb_status(void *ctx, json_t *out)
{
	(void)ctx;
	json_object_set_new(out, "held", json_false());
	return 0;
}
static int cb_set(void *ctx, double w, json_t *reply)
{
	(void)ctx, (void)w, (void)reply;
	return 0;
}
static int cb_hold(void *ctx, bool hold, json_t *reply)
{
	(void)ctx, (void)hold, (void)reply;
	return 0;
}
static int cb_reload(void *ctx, json_t *reply)
{
	(void)ctx, (void)reply;
	return 0;
}
static const struct ctlsock_ops ops = { cb_status, cb_set, cb_hold, cb_reload };

struct fx {
	char dir[64], path[96];
	struct ctlsock *cs;
	FILE *log;
};

static void fx_open(struct fx *f, const struct ctlsock_acl *acl)
{
	struct diag_list dl = { 0 };
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/peer_ctlsock_XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/govd.sock", f->dir);
	f->log = tmpfile();
	assert_non_null(f->log);
	log_init(LOG_DEBUG, f->log);
	struct ctlsock_cfg cfg = { .path = f->path, .group = (gid_t)-1, .acl = *acl };
	int rc = ctlsock_open(&f->cs, &cfg, &dl);
	if (rc)
		diag_print(&dl, stdout);
	assert_int_equal(rc, 0);
	diag_clear(&dl);
}

static void fx_close(struct fx *f)
{
	ctlsock_close(f->cs);
	log_fini();
	fclose(f->log);
	rmdir(f->dir);
}

static size_t count_lines_with(struct fx *f, const char *needle, char *last, size_t last_len)
{
	fflush(f->log);
	rewind(f->log);
	char line[1024];
	size_t n = 0;
	while (fgets(line, sizeof(line), f->log))
		if (strstr(line, needle)) {
			n++;
			snprintf(last, last_len, "%s", line);
		}
	return n;
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void pump(struct fx *f, int ms)
{
	struct pollfd p = { ctlsock_fd(f->cs), POLLIN, 0 };
	while (poll(&p, 1, ms) > 0)
		assert_int_equal(ctlsock_handle(f->cs, &ops, NULL), 0);
}

/* 200 refused connections: a handful of warnings, the last with its count. */
static void test_refusals_rate_limited(void **state)
{
	(void)state;
	struct ctlsock_acl nobody = { 0 };
	struct fx f;
	fx_open(&f, &nobody);
	const int n = 200;
	for (int i = 0; i < n; i++) {
		int fd = connect_to(f.path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "{\"cmd\":\"status\"}\n", 17), 17);
		pump(&f, 20);
		char b[512];
		(void)read(fd, b, sizeof(b));
		close(fd);
	}
	char last[1024] = "";
	size_t lines = count_lines_with(&f, "not on the control allow-list", last, sizeof(last));
	print_message("%d refused connections: %zu log lines, last: %s", n, lines, last);
	/* 1, 2, 4, ..., 128: eight lines */
	assert_true(lines >= 1 && lines <= 9);
	assert_non_null(strstr(last, "128 such in this episode"));
	fx_close(&f);
}

/* A read-role peer (uid 65534) opens 3 x CTL_MAX_CLIENTS connections, one
 * after another, after the operator (uid 0) connected and before its
 * request is read: the operator's request is still answered. Needs root
 * to be two users. */
static void test_read_churn_keeps_operator(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		TEST_SKIP("not root: cannot connect as a second user");
	}
	struct ctlsock_acl acl = { 0 };
	acl.op.uids[acl.op.n_uids++] = 0;
	acl.read.uids[acl.read.n_uids++] = 65534;
	struct fx f;
	fx_open(&f, &acl);
	assert_int_equal(chmod(f.dir, 0755), 0);
	assert_int_equal(chmod(f.path, 0666), 0);
	int op = connect_to(f.path);
	assert_true(op >= 0);
	pump(&f, 50); /* accepted, nothing read yet */

	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		for (int i = 0; i < 3 * CTL_MAX_CLIENTS; i++) {
			(void)connect_to(f.path); /* kept open until killed */
			char c = 'c';
			(void)write(pfd[1], &c, 1); /* one connect done */
		}
		char c = 'd';
		(void)write(pfd[1], &c, 1);
		pause(); /* keep them open until killed */
		_exit(0);
	}
	close(pfd[1]);
	/* serve while the child connects (its connects block once the backlog is full) */
	bool done = false;
	for (int it = 0; it < 2000 && !done; it++) {
		struct pollfd p[2] = { { ctlsock_fd(f.cs), POLLIN, 0 }, { pfd[0], POLLIN, 0 } };
		assert_true(poll(p, 2, 5000) > 0);
		if (p[0].revents)
			assert_int_equal(ctlsock_handle(f.cs, &ops, NULL), 0);
		if (p[1].revents) {
			char c;
			if (read(pfd[0], &c, 1) != 1 || c == 'd')
				done = true;
		}
	}
	pump(&f, 50);
	if (!done)
		kill(pid, SIGKILL);
	assert_true(done);
	assert_int_equal(write(op, "{\"cmd\":\"status\"}\n", 17), 17);
	char buf[4096] = "";
	size_t len = 0;
	for (int it = 0; it < 200 && !memchr(buf, '\n', len); it++) {
		pump(&f, 10);
		ssize_t r = recv(op, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
		if (r == 0)
			break;
		if (r > 0)
			len += (size_t)r;
	}
	buf[len] = '\0';
	print_message("operator after %d read-role connections: '%.80s'\n", 3 * CTL_MAX_CLIENTS, buf);
	kill(pid, SIGKILL); /* before any assertion: no child outlives a failure */
	waitpid(pid, NULL, 0);
	assert_non_null(strstr(buf, "\"ok\":true"));
	close(op);
	close(pfd[0]);
	fx_close(&f);
}

/* govctl's side: a govd (or whatever holds the socket path) that drips
 * its reply a byte every 50 ms cannot stretch ctlsock_request past its
 * timeout_ms (SO_RCVTIMEO alone bounded each read, not the whole). */
struct dripper {
	int lfd;
	pthread_t thr;
};

static void *drip_reply(void *arg)
{
	struct dripper *d = arg;
	int c = accept(d->lfd, NULL, NULL);
	if (c < 0)
		return NULL;
	char b[256];
	(void)read(c, b, sizeof(b));
	static const char reply[] = "{\"ok\":true,\"pad\":\"0123456789012345678901234567890123456789\"}\n";
	for (size_t i = 0; i < sizeof(reply) - 1; i++) {
		if (send(c, reply + i, 1, MSG_NOSIGNAL) != 1)
			break;
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	close(c);
	return NULL;
}

static void test_client_whole_timeout(void **state)
{
	(void)state;
	char dir[] = "/tmp/peer_ctlcli_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[96];
	snprintf(path, sizeof(path), "%s/govd.sock", dir);
	struct dripper d;
	d.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_int_equal(bind(d.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(d.lfd, 1), 0);
	assert_int_equal(pthread_create(&d.thr, NULL, drip_reply, &d), 0);
	json_t *req = json_pack("{s:s}", "cmd", "status"), *reply = NULL;
	char err[256] = "";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = ctlsock_request(path, req, &reply, 500, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("reply dripped at 50 ms/byte (~3.4 s), timeout_ms 500: rc %d after %.2f s: %s\n", rc,
		      took, err);
	pthread_join(d.thr, NULL);
	json_decref(req);
	json_decref(reply);
	close(d.lfd);
	unlink(path);
	rmdir(dir);
	assert_int_equal(rc, -ETIMEDOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals_rate_limited),
		cmocka_unit_test(test_read_churn_keeps_operator),
		cmocka_unit_test(test_client_whole_timeout),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
