/* libFuzzer target: the policy loader on arbitrary bytes. It must return 0
 * with a policy or an error with at least one error diag, never crash, leak
 * or read out of bounds (built with ASan+UBSan). Seeds: the shipped policies
 * and tests/policies (tests/fuzz/corpus/fuzz_policy/). */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "governor/controllers/controller.h"
#include "governor/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list d = { 0 };
	struct policy *p = NULL;
	int rc = policy_load_string("fuzz.yaml", (const char *)data, size, &p, &d);

	/* The contract: success <=> a policy <=> no error diag. */
	if (rc == 0) {
		if (!p || diag_count(&d, DIAG_ERROR))
			abort();
		struct policy_slice_rule r;
		for (size_t i = 0; i < p->n_slices; i++) {
			policy_slice_rule(p, p->slices[i].name, &r);
			if (r.int8_min_fraction > r.int8_max_fraction || r.max_drop < 0)
				abort(); /* the loader let a contradiction through */
		}
		struct hal_limits lim = { 0 };
		char why[64];
		(void)policy_envelope_check(p, &lim, 25.0, why, sizeof(why));
	} else if (p || !diag_count(&d, DIAG_ERROR)) {
		abort();
	}
	char buf[2048];
	for (size_t i = 0; i < d.n; i++)
		diag_format(&d.v[i], buf, sizeof(buf));
	policy_free(p);
	diag_clear(&d);
	return 0;
}
