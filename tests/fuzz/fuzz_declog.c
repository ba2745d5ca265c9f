/* libFuzzer target: the decision-log reader (governor/loop/declog_read.c)
 * on arbitrary bytes. It must return 0 with a header and at least one
 * period, or an error message naming the file, never crash, leak or read
 * out of bounds (built with ASan+UBSan). Seeds: logs the writer produced
 * and broken ones (tests/fuzz/corpus/fuzz_declog/). */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governor/loop/declog_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	int headers;
	size_t periods;
};

static int on_header(void *ctx, const struct declog_head *h)
{
	struct seen *s = ctx;
	s->headers++;
	if (!(h->period_ms >= 1 && h->period_ms <= 3600e3) || h->n_slices > HAL_MAX_SLICES)
		abort(); /* the reader let a bad header through */
	return 0;
}

static int on_period(void *ctx, const struct declog_period *p, bool copied)
{
	(void)p;
	(void)copied;
	struct seen *s = ctx;
	if (!s->headers)
		abort(); /* a period before the header */
	s->periods++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/fuzz_declog-%d.jsonl", (int)getpid());
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	static const struct declog_read_cb cb = { .header = on_header, .period = on_period };
	struct seen s = { 0 };
	char err[512] = "";
	int rc = declog_read(path, 1 << 20, &cb, &s, err, sizeof(err));
	/* The contract: success <=> one header and a period; an error names the file. */
	if (rc == 0 && (s.headers != 1 || !s.periods))
		abort();
	if (rc != 0 && strncmp(err, path, strlen(path)))
		abort();
	unlink(path);
	return 0;
}
