/* libFuzzer target for the Prometheus text parser and everything the
 * serving backend does with a parsed scrape (histogram extraction,
 * quantiles, interval deltas, hist conversion, the replica merge of two
 * families' buckets and the ratio gauge's max). Seeds: tests/fuzz/corpus/fuzz_promtext/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "hal/promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy without a terminator: reading past size is caught by ASan */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct prom_doc doc;
	struct prom_error err;
	if (prom_parse(buf, size, &doc, &err) == 0) {
		static struct hist h;
		static struct prom_buckets prev; /* the serving backend's last scrape */
		static struct prom_buckets acc;  /* replicas merged bucket by bucket */
		prev.n = 0;
		acc.n = 0;
		for (size_t i = 0; i < doc.n_samples && i < 16; i++) {
			const struct prom_sample *s = &doc.samples[i];
			struct prom_buckets b, d;
			if (prom_histogram_get(&doc, s->family, NULL, &b) == 0) {
				(void)prom_bucket_quantile(0.99, &b);
				if (prev.n)
					prom_buckets_delta(&d, &b, &prev);
				else
					d = b;
				prev = b;
				hist_reset(&h);
				prom_buckets_to_hist(&h, &d, 1000.0);
				(void)hist_quantile(&h, 0.95);
				(void)prom_bucket_quantile(0.5, &d);
				/* another family as a second replica: merged when the bounds match */
				if (prom_buckets_merge(&acc, &d) == 0)
					(void)prom_bucket_quantile(0.95, &acc);
			}
			double v;
			(void)prom_value_sum(&doc, s->name, NULL, NULL, NULL, &v);
			(void)prom_value_max(&doc, s->name, NULL, &v);
		}
	}
	prom_doc_free(&doc);
	free(buf);
	return 0;
}
