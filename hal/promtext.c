/* Prometheus text exposition format 0.0.4 parser and histogram maths.
 * The input is a byte buffer with a length; nothing reads past it and
 * nothing assumes a NUL terminator. Every malformed input is an error
 * return with line:col, never an abort. */
#include "hal/promtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena: strings and label arrays live until prom_doc_free ---- */

struct prom_blk {
	struct prom_blk *next;
	size_t used, cap;
	max_align_t data[];
};

struct prom_arena {
	struct prom_blk *head;
};

#define ARENA_BLK 65536

static void *arena_alloc(struct prom_arena *a, size_t n)
{
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!a->head || a->head->cap - a->head->used < n) {
		size_t cap = n > ARENA_BLK ? n : ARENA_BLK;
		struct prom_blk *b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	void *p = (char *)a->head->data + a->head->used;
	a->head->used += n;
	return p;
}

static char *arena_strndup(struct prom_arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void prom_doc_free(struct prom_doc *doc)
{
	if (!doc)
		return;
	if (doc->arena) {
		struct prom_blk *b = doc->arena->head;
		while (b) {
			struct prom_blk *n = b->next;
			free(b);
			b = n;
		}
		free(doc->arena);
	}
	free(doc->samples);
	free(doc->families);
	memset(doc, 0, sizeof(*doc));
}

/* ---- lexer state ---- */

struct lex {
	const char *buf, *end; /* whole input */
	const char *p, *eol;   /* cursor and end of the current line */
	const char *bol;       /* beginning of the current line */
	int line;
	struct prom_doc *doc;
	struct prom_error *err;
	/* distinct sample names seen (consecutive duplicates folded) for the
	 * "TYPE after samples" check */
	const char **seen;
	size_t n_seen, cap_seen;
	const struct prom_family *last_fam;
};

static int fail(struct lex *lx, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct lex *lx, const char *at, const char *fmt, ...)
{
	if (lx->err) {
		char msg[128];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		lx->err->line = lx->line;
		lx->err->col = (int)(at - lx->bol) + 1;
		snprintf(lx->err->msg, sizeof(lx->err->msg), "%s at %d:%d", msg, lx->err->line,
			 lx->err->col);
	}
	return -EBADMSG;
}

static int oom(struct lex *lx)
{
	if (lx->err) {
		lx->err->line = lx->line;
		lx->err->col = 0;
		snprintf(lx->err->msg, sizeof(lx->err->msg), "out of memory");
	}
	return -ENOMEM;
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static void skip_ws(struct lex *lx)
{
	while (lx->p < lx->eol && is_ws(*lx->p))
		lx->p++;
}

static bool name_start(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static bool name_char(char c, bool colon)
{
	return name_start(c, colon) || (c >= '0' && c <= '9');
}

/* Metric names allow ':', label names do not. Returns the length, 0 if none. */
static size_t scan_name(struct lex *lx, bool colon)
{
	const char *s = lx->p;
	if (s >= lx->eol || !name_start(*s, colon))
		return 0;
	while (s < lx->eol && name_char(*s, colon))
		s++;
	return (size_t)(s - lx->p);
}

static size_t scan_token(struct lex *lx)
{
	const char *s = lx->p;
	while (s < lx->eol && !is_ws(*s))
		s++;
	return (size_t)(s - lx->p);
}

static bool tok_eq(const char *t, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(t, lit, n) == 0;
}

static bool tok_ieq(const char *t, size_t n, const char *lit)
{
	if (strlen(lit) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lit[i])
			return false;
	}
	return true;
}

/* Go ParseFloat syntax as the spec asks, including NaN, +Inf, -Inf. */
static int parse_float(const char *t, size_t n, double *out)
{
	const char *u = t;
	size_t m = n;
	if (m && (*u == '+' || *u == '-')) {
		u++;
		m--;
	}
	if (tok_ieq(u, m, "inf") || tok_ieq(u, m, "infinity")) {
		*out = t[0] == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (tok_ieq(u, m, "nan")) {
		*out = NAN;
		return 0;
	}
	if (n == 0 || n > 63)
		return -1;
	bool digit = false;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		if (c >= '0' && c <= '9')
			digit = true;
		else if (!strchr("+-.eExXpPaAbBcCdDfF", c))
			return -1;
	}
	if (!digit)
		return -1;
	char tmp[64];
	memcpy(tmp, t, n);
	tmp[n] = '\0';
	char *endp;
	errno = 0;
	double v = strtod(tmp, &endp);
	if (endp != tmp + n)
		return -1;
	*out = v; /* ERANGE: +-HUGE_VAL or a denormal, as Go returns +-Inf */
	return 0;
}

static int parse_i64(const char *t, size_t n, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	if (n && (t[0] == '-' || t[0] == '+')) {
		neg = t[0] == '-';
		i = 1;
	}
	if (i == n)
		return -1;
	uint64_t v = 0;
	for (; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(t[i] - '0');
		if (v > (UINT64_C(9223372036854775808) - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (!neg && v > INT64_MAX)
		return -1;
	*out = neg ? (v == UINT64_C(9223372036854775808) ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

static struct prom_family *family_find_mut(struct prom_doc *doc, const char *name, size_t n)
{
	for (size_t i = 0; i < doc->n_families; i++) {
		const char *f = doc->families[i].name;
		if (strlen(f) == n && memcmp(f, name, n) == 0)
			return &doc->families[i];
	}
	return NULL;
}

const struct prom_family *prom_family_find(const struct prom_doc *doc, const char *name)
{
	return family_find_mut((struct prom_doc *)doc, name, strlen(name));
}

static struct prom_family *family_add(struct lex *lx, const char *name, size_t n)
{
	struct prom_doc *doc = lx->doc;
	if (doc->n_families == doc->cap_families) {
		size_t cap = doc->cap_families ? doc->cap_families * 2 : 32;
		struct prom_family *f = realloc(doc->families, cap * sizeof(*f));
		if (!f)
			return NULL;
		doc->families = f;
		doc->cap_families = cap;
	}
	char *s = arena_strndup(doc->arena, name, n);
	if (!s)
		return NULL;
	struct prom_family *f = &doc->families[doc->n_families++];
	f->name = s;
	f->type = PROM_UNTYPED;
	f->help = NULL;
	lx->last_fam = NULL; /* realloc may have moved the table */
	return f;
}

/* Family x owns samples x, x_bucket, x_sum, x_count, x_total depending on its type. */
static bool name_in_family(const char *sample, const char *fam, size_t fn)
{
	if (strncmp(sample, fam, fn) != 0)
		return false;
	const char *suf = sample + fn;
	return !*suf || !strcmp(suf, "_bucket") || !strcmp(suf, "_sum") || !strcmp(suf, "_count") ||
	       !strcmp(suf, "_total");
}

/* "\\" -> '\', "\n" -> LF; in label values also "\"" -> '"'. */
static char *unescape(struct lex *lx, const char *s, size_t n, bool label, const char **bad)
{
	char *out = arena_alloc(lx->doc->arena, n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 == n) {
			out[o++] = s[i];
			continue;
		}
		char c = s[i + 1];
		if (c == '\\' || c == 'n' || (label && c == '"')) {
			out[o++] = c == 'n' ? '\n' : c;
			i++;
		} else if (label) {
			*bad = s + i;
			return NULL;
		} else {
			out[o++] = s[i]; /* HELP: unknown escapes are kept as written */
		}
	}
	out[o] = '\0';
	return out;
}

static int parse_comment(struct lex *lx)
{
	lx->p++; /* '#' */
	skip_ws(lx);
	size_t kn = scan_token(lx);
	bool help = tok_eq(lx->p, kn, "HELP"), type = tok_eq(lx->p, kn, "TYPE");
	if (!help && !type)
		return 0; /* plain comment */
	lx->p += kn;
	if (lx->p < lx->eol && !is_ws(*lx->p))
		return 0; /* "# HELPER ..." is a comment */
	skip_ws(lx);
	const char *at = lx->p;
	size_t nn = scan_name(lx, true);
	if (!nn)
		return fail(lx, at, "expected metric name after %s", help ? "HELP" : "TYPE");
	const char *name = lx->p;
	lx->p += nn;
	if (lx->p < lx->eol && !is_ws(*lx->p))
		return fail(lx, lx->p, "invalid character '%c' in metric name", *lx->p);
	struct prom_family *f = family_find_mut(lx->doc, name, nn);
	if (help) {
		if (f && f->help)
			return fail(lx, at, "second HELP line for metric name '%.*s'", (int)nn, name);
		if (!f && !(f = family_add(lx, name, nn)))
			return oom(lx);
		if (lx->p < lx->eol)
			lx->p++; /* the one separator; the docstring keeps the rest */
		const char *bad = NULL;
		f->help = unescape(lx, lx->p, (size_t)(lx->eol - lx->p), false, &bad);
		if (!f->help)
			return oom(lx);
		return 0;
	}
	skip_ws(lx);
	const char *tat = lx->p;
	size_t tn = scan_token(lx);
	enum prom_type t;
	if (tok_eq(lx->p, tn, "counter"))
		t = PROM_COUNTER;
	else if (tok_eq(lx->p, tn, "gauge"))
		t = PROM_GAUGE;
	else if (tok_eq(lx->p, tn, "histogram"))
		t = PROM_HISTOGRAM;
	else if (tok_eq(lx->p, tn, "summary"))
		t = PROM_SUMMARY;
	else if (tok_eq(lx->p, tn, "untyped"))
		t = PROM_UNTYPED;
	else if (tn == 0)
		return fail(lx, tat, "expected metric type after TYPE %.*s", (int)nn, name);
	else
		return fail(lx, tat, "unknown metric type '%.*s' (counter, gauge, histogram, summary, untyped)",
			    (int)(tn > 32 ? 32 : tn), lx->p);
	lx->p += tn;
	skip_ws(lx);
	if (lx->p < lx->eol)
		return fail(lx, lx->p, "unexpected text after metric type");
	if (f && f->type != PROM_UNTYPED)
		return fail(lx, at, "second TYPE line for metric name '%.*s'", (int)nn, name);
	for (size_t i = 0; i < lx->n_seen; i++)
		if (name_in_family(lx->seen[i], name, nn))
			return fail(lx, at, "TYPE line for '%.*s' after its samples", (int)nn, name);
	if (!f && !(f = family_add(lx, name, nn)))
		return oom(lx);
	f->type = t;
	return 0;
}

static const struct prom_family *typed_family(struct lex *lx, const char *name, size_t n)
{
	if (lx->last_fam && strlen(lx->last_fam->name) == n && !memcmp(lx->last_fam->name, name, n))
		return lx->last_fam;
	const struct prom_family *f = family_find_mut(lx->doc, name, n);
	if (f && f->type != PROM_UNTYPED) {
		lx->last_fam = f;
		return f;
	}
	return NULL;
}

static bool has_suffix(const char *s, size_t n, const char *suf, size_t *base)
{
	size_t k = strlen(suf);
	if (n <= k || memcmp(s + n - k, suf, k) != 0)
		return false;
	*base = n - k;
	return true;
}

/* Which family and role a sample name has. */
static int classify(struct lex *lx, struct prom_sample *s, const char *name, size_t n, const char *at)
{
	const struct prom_family *f = typed_family(lx, name, n);
	size_t b;
	s->role = PROM_ROLE_VALUE;
	if (f) {
		s->family = f->name;
		s->type = f->type;
		if (f->type == PROM_HISTOGRAM)
			return fail(lx, at, "histogram sample '%.*s' needs a _bucket, _sum or _count suffix",
				    (int)n, name);
		if (f->type == PROM_SUMMARY && !prom_label_get(s, "quantile"))
			return fail(lx, at, "summary sample '%.*s' without a quantile label", (int)n, name);
		return 0;
	}
	static const struct {
		const char *suf;
		enum prom_role role;
	} sufs[] = { { "_bucket", PROM_ROLE_BUCKET },
		     { "_sum", PROM_ROLE_SUM },
		     { "_count", PROM_ROLE_COUNT },
		     { "_total", PROM_ROLE_VALUE } };
	for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++) {
		if (!has_suffix(name, n, sufs[i].suf, &b) || !(f = typed_family(lx, name, b)))
			continue;
		bool ok = (i == 0 && f->type == PROM_HISTOGRAM) ||
			  ((i == 1 || i == 2) && (f->type == PROM_HISTOGRAM || f->type == PROM_SUMMARY)) ||
			  (i == 3 && f->type == PROM_COUNTER);
		if (!ok)
			continue;
		s->family = f->name;
		s->type = f->type;
		s->role = sufs[i].role;
		return 0;
	}
	s->family = s->name;
	s->type = PROM_UNTYPED;
	return 0;
}

static int parse_labels(struct lex *lx, struct prom_sample *s)
{
	struct prom_label tmp[64];
	size_t n = 0;
	lx->p++; /* '{' */
	skip_ws(lx);
	while (lx->p < lx->eol && *lx->p != '}') {
		const char *at = lx->p;
		size_t nn = scan_name(lx, false);
		if (!nn)
			return fail(lx, at, "expected label name");
		const char *name = lx->p;
		lx->p += nn;
		skip_ws(lx);
		if (lx->p >= lx->eol || *lx->p != '=')
			return fail(lx, lx->p, "expected '=' after label name");
		lx->p++;
		skip_ws(lx);
		if (lx->p >= lx->eol || *lx->p != '"')
			return fail(lx, lx->p, "expected '\"' to open the label value");
		const char *v = ++lx->p;
		while (lx->p < lx->eol && *lx->p != '"') {
			if (*lx->p == '\\' && lx->p + 1 < lx->eol)
				lx->p++;
			lx->p++;
		}
		if (lx->p >= lx->eol)
			return fail(lx, v - 1, "unterminated label value");
		size_t vn = (size_t)(lx->p - v);
		lx->p++; /* closing quote */
		if (n == sizeof(tmp) / sizeof(tmp[0]))
			return fail(lx, at, "more than %zu labels", sizeof(tmp) / sizeof(tmp[0]));
		for (size_t i = 0; i < n; i++)
			if (strlen(tmp[i].name) == nn && !memcmp(tmp[i].name, name, nn))
				return fail(lx, at, "duplicate label name '%.*s'", (int)nn, name);
		const char *bad = NULL;
		char *nm = arena_strndup(lx->doc->arena, name, nn);
		char *val = nm ? unescape(lx, v, vn, true, &bad) : NULL;
		if (bad)
			return fail(lx, bad, "invalid escape sequence '\\%c' in label value", bad[1]);
		if (!val)
			return oom(lx);
		tmp[n].name = nm;
		tmp[n].value = val;
		n++;
		skip_ws(lx);
		if (lx->p < lx->eol && *lx->p == ',') {
			lx->p++;
			skip_ws(lx);
			continue;
		}
		if (lx->p >= lx->eol || *lx->p != '}')
			return fail(lx, lx->p, "expected ',' or '}' after label value");
	}
	if (lx->p >= lx->eol)
		return fail(lx, lx->p, "expected '}' to close the label set");
	lx->p++;
	if (n) {
		struct prom_label *l = arena_alloc(lx->doc->arena, n * sizeof(*l));
		if (!l)
			return oom(lx);
		memcpy(l, tmp, n * sizeof(*l));
		s->labels = l;
	}
	s->n_labels = n;
	return 0;
}

static int parse_sample(struct lex *lx)
{
	struct prom_sample s = { .line = lx->line };
	const char *at = lx->p;
	size_t nn = scan_name(lx, true);
	if (!nn)
		return fail(lx, at, "expected metric name, found '%c'", *at);
	const char *name = lx->p;
	lx->p += nn;
	const char *after = lx->p;
	skip_ws(lx);
	bool ws = lx->p > after;
	if (lx->p < lx->eol && *lx->p == '{') {
		int rc = parse_labels(lx, &s);
		if (rc)
			return rc;
		after = lx->p;
		skip_ws(lx);
		ws = lx->p > after;
	}
	if (lx->p < lx->eol && !ws) {
		if (lx->p[-1] == '}')
			return fail(lx, lx->p, "expected whitespace before the value");
		return fail(lx, lx->p, "invalid character '%c' in metric name", *lx->p);
	}
	const char *vat = lx->p;
	size_t vn = scan_token(lx);
	if (!vn)
		return fail(lx, vat, "expected value after metric '%.*s'", (int)nn, name);
	if (parse_float(lx->p, vn, &s.value))
		return fail(lx, vat, "invalid value '%.*s'", (int)(vn > 32 ? 32 : vn), lx->p);
	lx->p += vn;
	skip_ws(lx);
	if (lx->p < lx->eol) {
		const char *tat = lx->p;
		size_t tn = scan_token(lx);
		if (parse_i64(lx->p, tn, &s.ts_ms))
			return fail(lx, tat, "invalid timestamp '%.*s' (integer milliseconds)",
				    (int)(tn > 32 ? 32 : tn), lx->p);
		s.has_ts = true;
		lx->p += tn;
		skip_ws(lx);
		if (lx->p < lx->eol)
			return fail(lx, lx->p, "unexpected text after timestamp");
	}
	struct prom_doc *doc = lx->doc;
	char *nm = arena_strndup(doc->arena, name, nn);
	if (!nm)
		return oom(lx);
	s.name = nm;
	int rc = classify(lx, &s, name, nn, at);
	if (rc)
		return rc;
	if (s.role == PROM_ROLE_BUCKET) {
		const char *le = prom_label_get(&s, "le");
		double v;
		if (!le)
			return fail(lx, at, "histogram bucket '%s' without an le label", nm);
		if (parse_float(le, strlen(le), &v) || isnan(v))
			return fail(lx, at, "invalid le bound \"%.32s\"", le);
	}
	if (s.type == PROM_SUMMARY && s.role == PROM_ROLE_VALUE) {
		const char *q = prom_label_get(&s, "quantile");
		double v;
		if (parse_float(q, strlen(q), &v))
			return fail(lx, at, "invalid quantile \"%.32s\"", q);
	}
	if (!lx->n_seen || strcmp(lx->seen[lx->n_seen - 1], nm) != 0) {
		if (lx->n_seen == lx->cap_seen) {
			size_t cap = lx->cap_seen ? lx->cap_seen * 2 : 64;
			const char **v = realloc(lx->seen, cap * sizeof(*v));
			if (!v)
				return oom(lx);
			lx->seen = v;
			lx->cap_seen = cap;
		}
		lx->seen[lx->n_seen++] = nm;
	}
	if (doc->n_samples == doc->cap_samples) {
		size_t cap = doc->cap_samples ? doc->cap_samples * 2 : 256;
		struct prom_sample *v = realloc(doc->samples, cap * sizeof(*v));
		if (!v)
			return oom(lx);
		doc->samples = v;
		doc->cap_samples = cap;
	}
	doc->samples[doc->n_samples++] = s;
	return 0;
}

/* Family pointers of samples refer to arena strings, so growing the family
 * table never invalidates them. */
int prom_parse(const char *buf, size_t len, struct prom_doc *doc, struct prom_error *err)
{
	memset(doc, 0, sizeof(*doc));
	if (err)
		memset(err, 0, sizeof(*err));
	doc->arena = calloc(1, sizeof(*doc->arena));
	if (!doc->arena)
		return -ENOMEM;
	if (!buf) /* an empty body (no bytes read): an empty document */
		buf = "", len = 0;
	struct lex lx = { .buf = buf, .end = buf + len, .p = buf, .line = 0, .doc = doc, .err = err };
	int rc = 0;
	const char *p = buf;
	while (p < lx.end) {
		lx.line++;
		lx.bol = p;
		const char *nl = memchr(p, '\n', (size_t)(lx.end - p));
		if (!nl) {
			lx.p = lx.eol = lx.end;
			rc = fail(&lx, lx.end, "truncated input: the last line has no line feed");
			break;
		}
		lx.eol = nl;
		const char *z = memchr(p, '\0', (size_t)(nl - p));
		if (z) {
			rc = fail(&lx, z, "NUL byte in input");
			break;
		}
		lx.p = p;
		skip_ws(&lx);
		if (lx.p < lx.eol) {
			rc = *lx.p == '#' ? parse_comment(&lx) : parse_sample(&lx);
			if (rc)
				break;
		}
		p = nl + 1;
	}
	free(lx.seen);
	if (rc) {
		prom_doc_free(doc);
		/* keep the doc usable (empty) after an error */
		doc->arena = NULL;
	}
	return rc;
}

const char *prom_label_get(const struct prom_sample *s, const char *name)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].name, name))
			return s->labels[i].value;
	return NULL;
}

/* ---- matchers ---- */

static void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int prom_matcher_parse(const char *s, struct prom_matcher *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	const char *p = s ? s : "";
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		const char *ns = p;
		if (!name_start(*p, false)) {
			errf(err, errlen, "expected label name at column %d of \"%s\"", (int)(p - s) + 1, s);
			return -EINVAL;
		}
		while (name_char(*p, false))
			p++;
		size_t nn = (size_t)(p - ns);
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '=') {
			errf(err, errlen, "expected '=' after label name at column %d of \"%s\"",
			     (int)(p - s) + 1, s);
			return -EINVAL;
		}
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		const char *vs = p;
		size_t vn;
		if (*p == '"') {
			vs = ++p;
			while (*p && *p != '"')
				p++;
			if (!*p) {
				errf(err, errlen, "unterminated quoted value in \"%s\"", s);
				return -EINVAL;
			}
			vn = (size_t)(p - vs);
			p++;
		} else {
			while (*p && *p != ',')
				p++;
			vn = (size_t)(p - vs);
			while (vn && (vs[vn - 1] == ' ' || vs[vn - 1] == '\t'))
				vn--;
		}
		if (m->n == PROM_MATCH_MAX || nn >= PROM_MATCH_LEN || vn >= PROM_MATCH_LEN) {
			errf(err, errlen, "matcher \"%s\" too long (at most %d labels of %d bytes)", s,
			     PROM_MATCH_MAX, PROM_MATCH_LEN - 1);
			return -E2BIG;
		}
		memcpy(m->name[m->n], ns, nn);
		memcpy(m->value[m->n], vs, vn);
		m->n++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == ',')
			p++;
		else if (*p) {
			errf(err, errlen, "expected ',' at column %d of \"%s\"", (int)(p - s) + 1, s);
			return -EINVAL;
		}
	}
}

bool prom_match(const struct prom_sample *s, const struct prom_matcher *m)
{
	if (!m)
		return true;
	for (size_t i = 0; i < m->n; i++) {
		const char *v = prom_label_get(s, m->name[i]);
		/* PromQL: a missing label equals "" */
		if (strcmp(v ? v : "", m->value[i]) != 0)
			return false;
	}
	return true;
}

static int value_agg(const struct prom_doc *doc, const char *name, const struct prom_matcher *m,
		     const char *extra_name, const char *extra_value, bool max, double *out)
{
	double acc = max ? -INFINITY : 0;
	bool any = false;
	for (size_t i = 0; i < doc->n_samples; i++) {
		const struct prom_sample *s = &doc->samples[i];
		bool named = !strcmp(s->name, name) ||
			     (s->role == PROM_ROLE_VALUE && s->type == PROM_COUNTER && !strcmp(s->family, name));
		if (!named || !prom_match(s, m))
			continue;
		if (extra_name) {
			const char *v = prom_label_get(s, extra_name);
			if (strcmp(v ? v : "", extra_value) != 0)
				continue;
		}
		if (!max)
			acc += s->value;
		else if (s->value > acc || isnan(s->value))
			acc = isnan(acc) ? acc : s->value; /* a NaN stays: the caller judges it */
		any = true;
	}
	if (!any)
		return -ENOENT;
	*out = acc;
	return 0;
}

int prom_value_sum(const struct prom_doc *doc, const char *name, const struct prom_matcher *m,
		   const char *extra_name, const char *extra_value, double *out)
{
	return value_agg(doc, name, m, extra_name, extra_value, false, out);
}

int prom_value_max(const struct prom_doc *doc, const char *name, const struct prom_matcher *m,
		   double *out)
{
	return value_agg(doc, name, m, NULL, NULL, true, out);
}

/* ---- histograms ---- */

static enum prom_role hist_role(const struct prom_sample *s, const char *family, size_t fn)
{
	if (s->type == PROM_HISTOGRAM && !strcmp(s->family, family))
		return s->role;
	/* untyped exposition: x_bucket / x_sum / x_count without a TYPE line */
	if (s->type != PROM_UNTYPED || strncmp(s->name, family, fn) != 0)
		return PROM_ROLE_VALUE;
	const char *suf = s->name + fn;
	if (!strcmp(suf, "_bucket") && prom_label_get(s, "le"))
		return PROM_ROLE_BUCKET;
	if (!strcmp(suf, "_sum"))
		return PROM_ROLE_SUM;
	if (!strcmp(suf, "_count"))
		return PROM_ROLE_COUNT;
	return PROM_ROLE_VALUE;
}

int prom_histogram_get(const struct prom_doc *doc, const char *family, const struct prom_matcher *m,
		       struct prom_buckets *out)
{
	memset(out, 0, sizeof(*out));
	size_t fn = strlen(family);
	unsigned contrib[PROM_MAX_BUCKETS] = { 0 };
	unsigned n_count = 0;
	bool any = false, have_count = false;
	for (size_t i = 0; i < doc->n_samples; i++) {
		const struct prom_sample *s = &doc->samples[i];
		enum prom_role r = hist_role(s, family, fn);
		if (r == PROM_ROLE_VALUE || !prom_match(s, m))
			continue;
		any = true;
		if (r == PROM_ROLE_SUM) {
			out->sum += s->value;
			continue;
		}
		if (r == PROM_ROLE_COUNT) {
			out->count += s->value;
			have_count = true;
			n_count++;
			continue;
		}
		const char *les = prom_label_get(s, "le");
		double le;
		if (!les || parse_float(les, strlen(les), &le) || isnan(le))
			return -EBADMSG;
		size_t k = 0;
		while (k < out->n && out->le[k] < le)
			k++;
		if (k == out->n || out->le[k] != le) {
			if (out->n == PROM_MAX_BUCKETS)
				return -E2BIG;
			memmove(&out->le[k + 1], &out->le[k], (out->n - k) * sizeof(double));
			memmove(&out->cum[k + 1], &out->cum[k], (out->n - k) * sizeof(double));
			memmove(&contrib[k + 1], &contrib[k], (out->n - k) * sizeof(unsigned));
			out->le[k] = le;
			out->cum[k] = 0;
			contrib[k] = 0;
			out->n++;
		}
		out->cum[k] += s->value;
		contrib[k]++;
	}
	if (!any)
		return -ENOENT;
	if (out->n == 0 || !isinf(out->le[out->n - 1]) || out->le[out->n - 1] < 0)
		return -EBADMSG;
	for (size_t k = 0; k < out->n; k++)
		if (contrib[k] != contrib[out->n - 1] || (have_count && contrib[k] != n_count))
			return -EBADMSG; /* series with different bucket bounds */
	if (!have_count)
		out->count = out->cum[out->n - 1];
	return 0;
}

static bool same_bounds(const struct prom_buckets *a, const struct prom_buckets *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->le[i] != b->le[i])
			return false;
	return true;
}

int prom_buckets_merge(struct prom_buckets *acc, const struct prom_buckets *b)
{
	if (acc->n == 0) {
		*acc = *b;
		return 0;
	}
	if (!same_bounds(acc, b))
		return -EDOM;
	for (size_t i = 0; i < b->n; i++)
		acc->cum[i] += b->cum[i];
	acc->count += b->count;
	acc->sum += b->sum;
	return 0;
}

bool prom_buckets_delta(struct prom_buckets *delta, const struct prom_buckets *now,
			const struct prom_buckets *prev)
{
	bool reset = !same_bounds(now, prev) || now->count < prev->count;
	for (size_t i = 0; !reset && i < now->n; i++)
		if (now->cum[i] < prev->cum[i])
			reset = true;
	*delta = *now;
	if (reset)
		return true;
	for (size_t i = 0; i < now->n; i++)
		delta->cum[i] = now->cum[i] - prev->cum[i];
	delta->count = now->count - prev->count;
	delta->sum = now->sum - prev->sum;
	return false;
}

double prom_bucket_quantile(double q, const struct prom_buckets *b)
{
	if (isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	size_t n = b->n;
	if (n < 2 || !isinf(b->le[n - 1]) || b->le[n - 1] < 0)
		return NAN;
	double cum[PROM_MAX_BUCKETS];
	double mx = 0;
	for (size_t i = 0; i < n; i++) { /* PromQL's ensureMonotonic */
		double c = isnan(b->cum[i]) ? 0 : b->cum[i];
		mx = c > mx ? c : mx;
		cum[i] = mx;
	}
	double obs = cum[n - 1];
	if (!(obs > 0))
		return NAN;
	double rank = q * obs;
	size_t i = 0;
	while (i < n - 1 && cum[i] < rank)
		i++;
	if (i == n - 1)
		return b->le[n - 2];
	if (i == 0 && b->le[0] <= 0)
		return b->le[0];
	double start = 0, end = b->le[i], count = cum[i];
	if (i > 0) {
		start = b->le[i - 1];
		count -= cum[i - 1];
		rank -= cum[i - 1];
	}
	if (!(count > 0))
		return start;
	return start + (end - start) * (rank / count);
}

static int fine_bucket(double v_ms)
{
	if (!(v_ms > HIST_MIN_MS))
		return 0;
	int k = (int)ceil(log(v_ms / HIST_MIN_MS) / log(HIST_RATIO));
	return k >= HIST_NBUCKETS ? HIST_NBUCKETS - 1 : k;
}

void prom_buckets_to_hist(struct hist *h, const struct prom_buckets *b, double unit_ms)
{
	double prev_cum = 0;
	for (size_t i = 0; i < b->n; i++) {
		double c = b->cum[i] - prev_cum;
		prev_cum = b->cum[i] > prev_cum ? b->cum[i] : prev_cum;
		if (!(c >= 0.5))
			continue;
		if (c > 1e15)
			c = 1e15; /* a nonsense count must not overflow the conversion */
		uint64_t cnt = (uint64_t)llround(c);
		double hi = b->le[i] * unit_ms;
		double lo = i ? b->le[i - 1] * unit_ms : 0.0;
		if (lo < 0)
			lo = 0;
		if (isinf(hi)) {
			/* histogram_quantile answers the highest finite bound here */
			h->count[fine_bucket(lo)] += cnt;
			h->n += cnt;
			if (lo > h->max_ms)
				h->max_ms = lo;
			continue;
		}
		int k0 = fine_bucket(lo), k1 = fine_bucket(hi);
		uint64_t done = 0;
		for (int k = k0; k <= k1; k++) {
			uint64_t target = cnt;
			if (k < k1 && hi > lo) {
				double top = hist_bucket_upper_ms(k);
				double f = (top - lo) / (hi - lo);
				f = f < 0 ? 0 : (f > 1 ? 1 : f);
				/* floor: observation j sits where the linear CDF reaches
				 * j/cnt, so integer ranks land where PromQL puts them */
				target = (uint64_t)floor((double)cnt * f + 1e-9);
			}
			if (target > done) {
				h->count[k] += target - done;
				done = target;
			}
		}
		h->n += cnt;
		if (hi > h->max_ms)
			h->max_ms = hi;
	}
	if (isfinite(b->sum))
		h->sum_ms += b->sum * unit_ms;
}

bool prom_counter_update(struct prom_counter *c, double raw)
{
	if (isnan(raw))
		return false;
	if (!c->have) {
		c->have = true;
		c->last_raw = raw;
		c->total = raw > 0 ? raw : 0;
		return false;
	}
	bool reset = raw < c->last_raw;
	c->total += reset ? (raw > 0 ? raw : 0) : raw - c->last_raw;
	c->last_raw = raw;
	return reset;
}
