/* Starting and stopping tests/hardening/peer_servers.py from a cmocka test.
 * Header-only; the tests include it once each. */
#ifndef GOVD_TESTS_PEER_UTIL_H
#define GOVD_TESTS_PEER_UTIL_H
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct peer {
	pid_t pid;
	unsigned port;
	char port_file[96];
};

/* mode, arg: peer_servers.py's. 0, or -1 when python3 or the script is
 * missing or the server did not come up within 10 s. */
static int peer_start(struct peer *p, const char *mode, const char *arg)
{
	const char *dir = getenv("PEER_DIR") ? getenv("PEER_DIR") : "tests/hardening";
	char script[512];
	snprintf(script, sizeof(script), "%s/peer_servers.py", dir);
	if (access(script, R_OK) || access("/usr/bin/python3", X_OK))
		return -1;
	snprintf(p->port_file, sizeof(p->port_file), "/tmp/govd-peer-%d-%ld.port", (int)getpid(),
		 (long)random());
	unlink(p->port_file);
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		execl("/usr/bin/python3", "python3", script, mode, arg, "--port-file", p->port_file,
		      "--lifetime", "240", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		FILE *f = fopen(p->port_file, "r");
		if (f) {
			int ok = fscanf(f, "%u", &p->port) == 1;
			fclose(f);
			if (ok)
				return 0;
		}
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void peer_stop(struct peer *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	unlink(p->port_file);
}

#endif
