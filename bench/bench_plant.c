/* Plant speed: one simulated hour (360 000 ticks) on one core.
 * Usage: bench_plant [scenario.yaml [seed]]  (default: h200-sxm, llama-3.1-8b,
 * generator at 8 rps, INT8 on half the requests). The target is well under
 * 0.36 s, i.e. 1000x real time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plant_models/plant.h"
#include "plant_models/scenario.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void default_scenario(struct scenario *sc)
{
	memset(sc, 0, sizeof(*sc));
	snprintf(sc->name, sizeof(sc->name), "bench-default");
	snprintf(sc->preset, sizeof(sc->preset), "h200-sxm");
	snprintf(sc->model, sizeof(sc->model), "llama-3.1-8b");
	sc->server.max_batch = 64;
	sc->server.max_queue = 4096;
	sc->duration_s = 3600;
	sc->inlet_c = 25;
	sc->cooling_factor = 1;
	sc->workload.kind = WORKLOAD_GENERATOR;
	sc->workload.time_scale = 1;
	sc->workload.gen = generator_azure_code_fit;
	sc->workload.gen.rate_rps = 8;
	sc->workload.gen.burst_cv = 1;
	sc->workload.n_slices = 1;
	sc->workload.slice_fraction[0] = 1;
	sc->n_slices = 1;
	snprintf(sc->slices[0].name, sizeof(sc->slices[0].name), "all");
	sc->slices[0].fraction = 1;
	sc->slices[0].int8_drop = 0.01;
	sc->slices[0].shadow_rate = 0.05;
	sc->default_seed = 1;
}

int main(int argc, char **argv)
{
	struct diag_list d = { 0 };
	struct scenario local, *sc = &local, *loaded = NULL;
	if (argc > 1) {
		if (scenario_load(argv[1], &loaded, &d)) {
			diag_print(&d, stderr);
			return 1;
		}
		sc = loaded;
	} else {
		default_scenario(&local);
	}
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : sc->default_seed;
	struct plant *p;
	if (plant_create(sc, seed, &p, &d)) {
		diag_print(&d, stderr);
		return 1;
	}
	for (uint32_t i = 0; i < sc->n_slices; i++)
		plant_set_int8_fraction(p, i, 0.5);
	const double sim_s = 3600;
	double t0 = now_s();
	/* 1 s steps, as a governor period would call it */
	for (int i = 1; i <= (int)sim_s && !p->failed; i++)
		plant_advance_to(p, i);
	double wall = now_s() - t0;
	const struct server_stats *st = server_get_stats(p->srv);
	printf("bench_plant: %s seed %llu: %.0f s simulated (%llu ticks) in %.3f s wall, "
	       "%.0f ns/tick, %.0fx real time\n",
	       sc->name, (unsigned long long)seed, p->t_s, (unsigned long long)p->tick, wall,
	       wall / (double)p->tick * 1e9, p->t_s / wall);
	printf("bench_plant: %llu requests completed, %llu tokens, tj %.1f C, %s\n",
	       (unsigned long long)st->completed, (unsigned long long)st->tokens_generated,
	       p->dev.tj_c, p->failed ? p->fail_reason : "no shutdown");
	plant_destroy(p);
	scenario_free(loaded);
	diag_clear(&d);
	return 0;
}
