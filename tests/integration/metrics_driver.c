/* Serves real metrics for tests/integration/metrics_promtool.sh: runs the
 * governor on the sim backend in virtual time (scenario and policy from the
 * command line), fills the metrics snapshot from every period as govd does,
 * publishes it on 127.0.0.1:0 and prints "port N" once it is serving. Then
 * it waits for SIGTERM/SIGINT (or for SECONDS to pass) and stops.
 *
 * Usage: metrics_driver SCENARIO POLICY SIM_SECONDS [SECONDS] */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/diag.h"
#include "governor/controllers/controller.h"
#include "governor/loop/governor.h"
#include "governor/daemon/metrics.h"
#include "governor/policy/policy.h"
#include "hal/hal.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"
#include "plant_models/scenario.h"

struct drv {
	struct metrics_snapshot snap;
	struct governor *g;
};

static int on_period(void *ctx, const struct gov_period *p)
{
	struct drv *d = ctx;
	metrics_device_update(&d->snap.dev[0], d->g, p, 0);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	struct diag_list diags = { 0 };
	struct scenario *sc = NULL;
	struct policy *pol = NULL;
	struct plant *plant = NULL;
	struct hal_dev dev = { 0 };
	struct govd_clock clk;
	struct governor *g = NULL;
	struct metrics_server *srv = NULL;
	static struct drv d;
	int rc = 1;

	if (argc < 4) {
		fprintf(stderr, "usage: metrics_driver SCENARIO POLICY SIM_SECONDS [SECONDS]\n");
		return 2;
	}
	double sim_s = atof(argv[3]);
	unsigned wait_s = argc > 4 ? (unsigned)atoi(argv[4]) : 60;
	if (scenario_load(argv[1], &sc, &diags) || policy_load(argv[2], &pol, &diags) ||
	    plant_create(sc, sc->default_seed, &plant, &diags))
		goto out;
	struct hal_dev_cfg hc = { .name = "sim0", .backend = "sim", .plant = plant };
	if (hal_open(&dev, &hc, &diags))
		goto out;
	if (hal_sim_clock(&dev, &clk))
		goto close_dev;
	metrics_snapshot_init(&d.snap);
	metrics_add_device(&d.snap, "sim0");
	metrics_device_set_policy(&d.snap.dev[0], pol);
	d.snap.node_budget_w = 700;
	struct governor_cfg gc = { .pol = pol, .dev = &dev, .clock = &clk, .seed = sc->default_seed,
				   .on_period = on_period, .cb_ctx = &d };
	if (governor_new(&gc, &g, &diags))
		goto close_dev;
	d.g = g;
	/* The daemon's loop shape: tick, time it, wait for the next period. */
	uint64_t end_ms = (uint64_t)llround(sim_s * 1000.0);
	uint64_t period_ms = pol->control.period_ms;
	for (uint64_t t = govd_clock_now_ms(&clk); t < end_ms; t += period_ms) {
		uint64_t t0 = govd_mono_ns();
		int r = governor_tick(g);
		metrics_observe_tick(&d.snap, (double)(govd_mono_ns() - t0) / 1e9);
		if (r < 0 || govd_clock_wait_until(&clk, t + period_ms))
			break;
	}
	governor_restore(g);

	struct metrics_cfg mc = { .listen = "127.0.0.1:0" };
	if (metrics_start(&srv, &mc, &diags))
		goto fini;
	metrics_publish(srv, &d.snap);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("port %u\n", metrics_port(srv));
	fflush(stdout);
	for (unsigned i = 0; i < wait_s * 10 && !stop; i++)
		usleep(100000);
	fprintf(stderr, "metrics_driver: %llu scrapes\n", (unsigned long long)metrics_scrapes(srv));
	metrics_stop(srv);
	rc = 0;
fini:
	governor_free(g);
close_dev:
	hal_close(&dev);
out:
	diag_print(&diags, stderr);
	diag_clear(&diags);
	plant_destroy(plant);
	policy_free(pol);
	scenario_free(sc);
	return rc;
}
