/* libFuzzer target: summary.json's reader (governor/sim/summary_read.c) on
 * arbitrary bytes. It must return 0 with the figures a verdict rests on, or
 * an error naming the file, never crash, leak or read out of bounds (built
 * with ASan+UBSan). Seeds: summaries the sim wrote and broken ones
 * (tests/fuzz/corpus/fuzz_summary/). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governor/sim/summary_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_summary-%d.json", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	struct sim_summary s;
	char err[512] = "";
	int rc = sim_summary_load(path, 1 << 20, &s, err, sizeof(err));
	if (rc == 0) {
		/* the contract: the required figures are numbers, windows are bounded */
		if (isnan(s.tokens_per_joule) || isnan(s.energy_total_j) || isnan(s.attainment) ||
		    !s.doc || s.n_slices > HAL_MAX_SLICES || (s.n_win && !s.win))
			abort();
		for (size_t i = 0; i < s.n_slices; i++)
			if (strlen(s.slice[i].name) >= HAL_NAME_LEN ||
			    sim_summary_slice(&s, s.slice[i].name) != &s.slice[i])
				abort();
		sim_summary_free(&s);
	} else if (strncmp(err, path, strlen(path))) {
		abort();
	}
	unlink(path);
	return 0;
}
