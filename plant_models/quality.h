/* Precision quality: each slice has a true INT8 accuracy drop (share of
 * requests whose INT8 answer is wrong where BF16's is right), and where the
 * server evaluates FP8 too (fp8), a true FP8 drop. A monitor sees them only
 * through shadow evaluation: a sampled share of requests is re-run in every
 * evaluated precision and compared with BF16, so its estimates carry
 * binomial noise. One draw decides both: a prompt FP8 gets wrong is one
 * INT8 gets wrong where INT8's drop is the larger (the hard prompts are
 * hard for both). Scenario events change a true drop (quality drift).
 * Pure model. */
#ifndef GOVD_PLANT_QUALITY_H
#define GOVD_PLANT_QUALITY_H
#include <stdbool.h>
#include <stdint.h>

#include "common/rng.h"
#include "plant_models/server.h"

struct quality_model {
	uint32_t n_slices;
	double true_drop[PLANT_MAX_SLICES];   /* 0..1 */
	double shadow_rate[PLANT_MAX_SLICES]; /* share of completed requests evaluated now */
	double default_rate[PLANT_MAX_SLICES]; /* the server's own (the scenario's) */
	uint64_t samples[PLANT_MAX_SLICES];
	uint64_t mismatches[PLANT_MAX_SLICES];
	bool fp8;                                  /* FP8 evaluated too */
	double true_drop_fp8[PLANT_MAX_SLICES];
	uint64_t samples_fp8[PLANT_MAX_SLICES], mismatches_fp8[PLANT_MAX_SLICES];
	uint64_t asked[PLANT_MAX_SLICES]; /* samples only a governor's ask took */
	struct rng rng;
};

/* stream: the monitor's own random stream, already forked for it by the
 * caller (rng_fork); it is copied, the caller's is not advanced. */
void quality_init(struct quality_model *q, uint32_t n_slices, const double *true_drop,
		  const double *shadow_rate, const struct rng *stream);
void quality_set_drop(struct quality_model *q, uint32_t slice, double true_drop);
/* Evaluate FP8 too, from now on, with these true drops (n_slices). */
void quality_init_fp8(struct quality_model *q, const double *true_drop_fp8);
void quality_set_drop_fp8(struct quality_model *q, uint32_t slice, double true_drop);
/* The rate a governor asked for (docs/serving-integration.md, "shadow_rate"):
 * a floor, the server keeps its own rate where that is higher; rate <= 0 or
 * NaN: the server's own. */
void quality_set_rate(struct quality_model *q, uint32_t slice, double rate);
/* Called for every completed request; samples it for shadow evaluation:
 * not at all, at the server's own rate, or only because a governor asked
 * for more (the re-runs the plant charges to the run). The server's own
 * evaluator scores every evaluated precision; an asked sample only the
 * rows in asked_rows (QUALITY_ROW_*: where the slice's next decision lies,
 * docs/serving-model.md, "Shadow evaluation's cost"). */
enum quality_sample { QUALITY_NOT_SAMPLED, QUALITY_SAMPLED_OWN, QUALITY_SAMPLED_ASKED };
enum { QUALITY_ROW_INT8 = 1u << 0, QUALITY_ROW_FP8 = 1u << 1 };
enum quality_sample quality_on_complete(struct quality_model *q, uint32_t slice,
					unsigned asked_rows);
/* Cumulative observed mismatch share of a slice (mismatches / samples); 0 before any sample. */
double quality_observed_drop(const struct quality_model *q, uint32_t slice);
/* An offline qualification run of one slice: n held-out prompts served in
 * both precisions, each a mismatch with probability true_drop (what
 * govctl qualify writes into a policy's prior). Returns the mismatches. */
uint64_t quality_qualify(double true_drop, uint64_t n, struct rng *r);

#endif
