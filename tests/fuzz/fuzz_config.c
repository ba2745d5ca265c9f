/* libFuzzer target: govd's deployment-config loader on arbitrary bytes. It
 * must return 0 with a config or an error with at least one error diag,
 * never crash, leak or read out of bounds (built with ASan+UBSan), and a
 * loaded config must be reloadable onto itself. Seeds: configs/sim.yaml and
 * configs/examples/ (tests/fuzz/corpus/fuzz_config/). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "governor/daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list d = { 0 };
	struct config *c = NULL;
	int rc = config_load_string("fuzz.yaml", (const char *)data, size, &c, &d);

	/* The contract: success <=> a config <=> no error diag. */
	if (rc == 0) {
		if (!c || diag_count(&d, DIAG_ERROR))
			abort();
		if (c->n_devices > CONFIG_MAX_DEVICES)
			abort();
		char why[256];
		if (!config_reloadable(c, c, why, sizeof(why)))
			abort(); /* nothing changed: a reload onto itself is always allowed */
	} else if (c || !diag_count(&d, DIAG_ERROR)) {
		abort();
	}
	char buf[2048];
	for (size_t i = 0; i < d.n; i++)
		diag_format(&d.v[i], buf, sizeof(buf));
	config_free(c);
	diag_clear(&d);
	return 0;
}
