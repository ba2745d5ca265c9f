/* govd's loop in real time on the sim backend: one device, 100 ms period,
 * the timerfd/signalfd loop of govd itself (daemon_run), for N seconds
 * (default 60), metrics endpoint and control socket open. Reports resident
 * memory (with PSS and private; bench/rss-breakdown has it per library), CPU share of one core, tick time
 * (sample to actuate, governor_tick over all devices, the plant's own
 * advance excluded and shown apart) and overruns. Targets (issue 5): RSS
 * < 4 MiB, CPU < 0.2 %, p99 tick < 1 ms.
 * Usage: bench_govd [seconds [devices]]  (run from the repository root) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/log.h"
#include "governor/daemon/daemon.h"

static void stop_cb(void *ctx, int fd)
{
	((struct daemon *)ctx)->stop = true;
}

/* A "Key: N kB" line of a /proc file, -1 when absent. */
static long proc_kb(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n))
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static long status_kb(const char *key)
{
	return proc_kb("/proc/self/status", key);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 60;
	int ndev = argc > 2 ? atoi(argv[2]) : 1;
	char dir[] = "/tmp/bench_govd_XXXXXX", cfg[256], cmd[300];
	if (secs <= 0 || ndev <= 0 || ndev > 8 || !mkdtemp(dir)) {
		fprintf(stderr, "usage: bench_govd [seconds [devices 1..8]]\n");
		return 2;
	}
	snprintf(cfg, sizeof(cfg), "%s/govd.yaml", dir);
	FILE *f = fopen(cfg, "w");
	if (!f)
		return 1;
	fprintf(f, "policy: %s/policies/thermal-conservative.yaml\nstate_file: %s/state.json\n"
		   "decision_log: {dir: %s/log}\nbudget_w: %d\nmetrics: {listen: \"127.0.0.1:0\"}\n"
		   "control: {socket: %s/ctl.sock}\ndevices:\n",
		GOVD_SOURCE_DIR, dir, dir, 600 * ndev, dir);
	for (int i = 0; i < ndev; i++)
		fprintf(f, "  - {name: gpu%d, backend: sim, options: {scenario: %s/configs/scenarios/default.yaml, seed: %d}}\n",
			i, GOVD_SOURCE_DIR, i + 1);
	fclose(f);

	log_init(LOG_WARN, NULL);
	daemon_block_signals();
	struct daemon *d = calloc(1, sizeof(*d));
	struct diag_list dl = { 0 };
	if (!d || daemon_init(d, cfg, false, NULL, &dl)) {
		diag_print(&dl, stderr);
		return 1;
	}
	log_set_level(LOG_WARN);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	struct itimerspec its = { .it_value = { .tv_sec = secs } };
	timerfd_settime(tfd, 0, &its, NULL);
	daemon_add_fd(d, tfd, stop_cb, d);

	long rss_start = status_kb("VmRSS:");
	double c0 = cpu_s();
	uint64_t t0 = govd_mono_ns();
	int rc = daemon_run(d);
	double wall = (double)(govd_mono_ns() - t0) * 1e-9, cpu = cpu_s() - c0;
	long rss = status_kb("VmRSS:"), hwm = status_kb("VmHWM:");
	const struct daemon_stats *st = &d->st;
	printf("bench_govd: %d device(s), 100 ms period, %.1f s real time, %llu periods, %llu overruns, rc %d\n",
	       ndev, wall, (unsigned long long)st->periods, (unsigned long long)st->overruns, rc);
	printf("  RSS %.2f MiB (start %.2f, peak %.2f)\n", rss / 1024.0, rss_start / 1024.0,
	       hwm / 1024.0);
	/* Most of RSS is clean pages of shared libraries that other processes
	 * map too: PSS and private say what govd itself costs the node. */
	const char *roll = "/proc/self/smaps_rollup";
	long pss = proc_kb(roll, "Pss:"), pc = proc_kb(roll, "Private_Clean:"),
	     pd = proc_kb(roll, "Private_Dirty:");
	printf("    anonymous %.2f MiB, file-backed %.2f MiB (libraries: bench/rss-breakdown); "
	       "PSS %.2f MiB, private %.2f MiB\n",
	       status_kb("RssAnon:") / 1024.0, status_kb("RssFile:") / 1024.0, pss / 1024.0,
	       (pc + pd) / 1024.0);
	printf("  CPU %.3f %% of one core (loop incl. plant), %.3f %% without the plant's advance\n",
	       100.0 * cpu / wall,
	       100.0 * (cpu - st->advance_ms.sum_ms / 1000.0) / wall);
	printf("  tick (sample..actuate..log, all devices): mean %.3f ms, p50 %.3f, p99 %.3f, max %.3f ms\n",
	       st->tick_ms.n ? st->tick_ms.sum_ms / (double)st->tick_ms.n : 0,
	       hist_quantile(&st->tick_ms, 0.5), hist_quantile(&st->tick_ms, 0.99), st->tick_ms.max_ms);
	printf("  plant advance (the simulated device's own time): p99 %.3f ms, max %.3f ms\n",
	       hist_quantile(&st->advance_ms, 0.99), st->advance_ms.max_ms);
	daemon_fini(d);
	free(d);
	close(tfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 && rc == 0 ? 0 : 1;
}
