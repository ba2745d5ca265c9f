/* Scenarios built in C for the plant and sim-HAL tests: independent of the
 * YAML format, small, and easy to give one event at a time. */
#ifndef GOVD_TESTS_PLANT_FIXTURE_H
#define GOVD_TESTS_PLANT_FIXTURE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plant_models/scenario.h"

#define FIX_MAX_EVENTS 16

struct fixture {
	struct scenario sc;
	struct scenario_event ev[FIX_MAX_EVENTS];
};

/* h200-sxm serving llama-3.1-8b, generator at rate_rps, two slices. */
static inline void fixture_init(struct fixture *f, double rate_rps)
{
	memset(f, 0, sizeof(*f));
	struct scenario *sc = &f->sc;
	snprintf(sc->name, sizeof(sc->name), "fixture");
	snprintf(sc->path, sizeof(sc->path), "tests/unit/plant_fixture.h");
	snprintf(sc->preset, sizeof(sc->preset), "h200-sxm");
	snprintf(sc->model, sizeof(sc->model), "llama-3.1-8b");
	sc->server.max_batch = 64;
	sc->server.max_queue = 4096;
	sc->duration_s = 60;
	sc->inlet_c = 25;
	sc->cooling_factor = 1;
	sc->workload.kind = WORKLOAD_GENERATOR;
	sc->workload.time_scale = 1;
	sc->workload.gen = generator_azure_code_fit;
	sc->workload.gen.rate_rps = rate_rps;
	sc->workload.gen.burst_cv = 1; /* Poisson: short windows see the mean rate */
	sc->workload.gen.diurnal_amplitude = 0;
	sc->workload.n_slices = 2;
	sc->workload.slice_fraction[0] = 0.5;
	sc->workload.slice_fraction[1] = 0.5;
	sc->n_slices = 2;
	snprintf(sc->slices[0].name, sizeof(sc->slices[0].name), "chat");
	snprintf(sc->slices[1].name, sizeof(sc->slices[1].name), "code");
	for (int i = 0; i < 2; i++) {
		sc->slices[i].fraction = 0.5;
		sc->slices[i].int8_drop = 0.01 * (i + 1);
		sc->slices[i].shadow_rate = 0.5;
	}
	sc->events = f->ev;
	sc->default_seed = 1;
}

/* Append an event; callers add them in time order (the loader sorts). */
static inline struct scenario_event *fixture_event(struct fixture *f, enum event_kind kind,
						   double at_s, double duration_s, double value)
{
	if (f->sc.n_events >= FIX_MAX_EVENTS)
		abort();
	struct scenario_event *e = &f->ev[f->sc.n_events++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->at_s = at_s;
	e->duration_s = duration_s;
	e->value = value;
	return e;
}

#endif
