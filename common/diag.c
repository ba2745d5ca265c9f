#include "common/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct diag *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			abort();
		l->v = v;
		l->cap = cap;
	}
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct diag *d = &l->v[l->n++];
	d->sev = sev;
	d->file = dup_or_empty(file);
	d->line = line;
	d->col = col;
	d->path = dup_or_empty(path);
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
