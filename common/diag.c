#include "common/diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsafe.h"

static char *dup_or_empty(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		abort(); /* out of memory while reporting an error: nothing sane left */
	return d;
}

void diag_add(struct diag_list *l, enum diag_sev sev, const char *file, int line, int col,
	      const char *path, const char *code, const char *fmt, ...)
{
	/* Bounded: a file of 40k bad keys gives DIAG_MAX lines, not 40k. */
	if (l->n >= DIAG_MAX) {
		struct diag *last = &l->v[l->n - 1];
		if (sev == DIAG_ERROR)
			last->sev = DIAG_ERROR;
		return;
	}
	bool full = l->n == DIAG_MAX - 1;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct diag *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			abort();
		l->v = v;
		l->cap = cap;
	}
	char raw[1024], msg[1024], kp[512], src[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (full)
		snprintf(raw, sizeof(raw), "too many problems: the first %d are shown", DIAG_MAX - 1);
	/* Keys, values and names come from files and peers: they reach a
	 * terminal or the journal, so control bytes (ESC ...) go escaped. */
	fsafe_escape(msg, sizeof(msg), raw);
	struct diag *d = &l->v[l->n++];
	d->sev = sev;
	d->file = dup_or_empty(fsafe_escape(src, sizeof(src), file ? file : ""));
	d->line = line;
	d->col = col;
	d->path = dup_or_empty(fsafe_escape(kp, sizeof(kp), path ? path : ""));
	d->code = dup_or_empty(code);
	d->msg = dup_or_empty(msg);
}

size_t diag_count(const struct diag_list *l, enum diag_sev sev)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		n += l->v[i].sev == sev;
	return n;
}

int diag_format(const struct diag *d, char *buf, size_t len)
{
	char loc[64] = "";
	if (d->line > 0 && d->col > 0)
		snprintf(loc, sizeof(loc), ":%d:%d", d->line, d->col);
	else if (d->line > 0)
		snprintf(loc, sizeof(loc), ":%d", d->line);
	return snprintf(buf, len, "%s%s: %s: %s%s%s", d->file, loc,
			d->sev == DIAG_ERROR ? "error" : "warning", d->path,
			d->path[0] ? ": " : "", d->msg);
}

void diag_print(const struct diag_list *l, FILE *out)
{
	char buf[2048];
	for (size_t i = 0; i < l->n; i++) {
		diag_format(&l->v[i], buf, sizeof(buf));
		fprintf(out, "%s\n", buf);
	}
}

void diag_clear(struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].file);
		free(l->v[i].path);
		free(l->v[i].code);
		free(l->v[i].msg);
	}
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}
