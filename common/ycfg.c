/* Strict YAML reading on top of libyaml's document API; see ycfg.h. */
#include "common/ycfg.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fsafe.h"
#include "common/strjoin.h"

/* 1 MiB: a policy or scenario is KiBs; libyaml's document takes ~25x its
 * input in memory (a 16 MiB list file took 430 MB and 2 s). */
#define YCFG_MAX_FILE_BYTES (1u * 1024u * 1024u)
#define YCFG_MAX_LINE (64u * 1024u)

static void verror(struct ycfg *y, enum diag_sev sev, const yaml_node_t *n, const char *path,
		   const char *code, const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

static void verror(struct ycfg *y, enum diag_sev sev, const yaml_node_t *n, const char *path,
		   const char *code, const char *fmt, va_list ap)
{
	char msg[900];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	int line = 0, col = 0;
	if (n) {
		line = (int)n->start_mark.line + 1;
		col = (int)n->start_mark.column + 1;
	}
	diag_add(y->diags, sev, y->file ? y->file : "", line, col, path ? path : "",
		 code ? code : "", "%s", msg);
}

void ycfg_error(struct ycfg *y, const yaml_node_t *n, const char *path, const char *code,
		const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(y, DIAG_ERROR, n, path, code, fmt, ap);
	va_end(ap);
}

void ycfg_warning(struct ycfg *y, const yaml_node_t *n, const char *path, const char *code,
		  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(y, DIAG_WARNING, n, path, code, fmt, ap);
	va_end(ap);
}

const char *ycfg_join(char *buf, size_t len, const char *path, const char *key)
{
	if (!path || !path[0])
		snprintf(buf, len, "%s", key);
	else
		snprintf(buf, len, "%s.%s", path, key);
	return buf;
}

const char *ycfg_index(char *buf, size_t len, const char *path, size_t i)
{
	snprintf(buf, len, "%s[%zu]", path ? path : "", i);
	return buf;
}

static int parse_error(struct ycfg *y, yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "unknown YAML error";
	if (p->error == YAML_READER_ERROR) {
		/* The reader has no line:col, only a byte offset (bad UTF-8, NUL ...). */
		diag_add(y->diags, DIAG_ERROR, y->file, 0, 0, "", "yaml-syntax",
			 "%s at byte %zu", problem, p->problem_offset);
		return -EINVAL;
	}
	if (p->error == YAML_MEMORY_ERROR) {
		diag_add(y->diags, DIAG_ERROR, y->file, 0, 0, "", "yaml-memory",
			 "out of memory while parsing");
		return -ENOMEM;
	}
	if (p->context)
		diag_add(y->diags, DIAG_ERROR, y->file, (int)p->problem_mark.line + 1,
			 (int)p->problem_mark.column + 1, "", "yaml-syntax", "%s %s (at line %d:%d)",
			 problem, p->context, (int)p->context_mark.line + 1,
			 (int)p->context_mark.column + 1);
	else
		diag_add(y->diags, DIAG_ERROR, y->file, (int)p->problem_mark.line + 1,
			 (int)p->problem_mark.column + 1, "", "yaml-syntax", "%s", problem);
	return -EINVAL;
}

/* Depth and width bounded on the event stream, before the document is
 * built: libyaml's scanner does work proportional to the nesting depth for
 * every token, so a 40k-deep file costs seconds; aborting at the first event
 * past YCFG_MAX_DEPTH keeps the cost linear in the input. */
static int check_structure(struct ycfg *y, const char *text, size_t len)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		diag_add(y->diags, DIAG_ERROR, y->file, 0, 0, "", "yaml-memory",
			 "cannot initialise the YAML parser");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	size_t width[YCFG_MAX_DEPTH + 1];
	bool is_map[YCFG_MAX_DEPTH + 1];
	int depth = 0, rc = 0;
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev))
			break; /* the loader reports syntax errors with their context */
		yaml_event_type_t t = ev.type;
		int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
		bool node = t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT ||
			    t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT;
		/* a mapping holds two nodes per entry (key and value) */
		if (node && depth > 0 &&
		    ++width[depth] > (is_map[depth] ? 2u : 1u) * YCFG_MAX_ENTRIES) {
			diag_add(y->diags, DIAG_ERROR, y->file, line, col, "", "yaml-width",
				 "more than %d entries in one %s (limit %d)", YCFG_MAX_ENTRIES,
				 is_map[depth] ? "mapping" : "list", YCFG_MAX_ENTRIES);
			rc = -E2BIG;
			break;
		}
		if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
			if (depth == YCFG_MAX_DEPTH) {
				diag_add(y->diags, DIAG_ERROR, y->file, line, col, "", "yaml-depth",
					 "nested deeper than %d levels (limit %d)", YCFG_MAX_DEPTH,
					 YCFG_MAX_DEPTH);
				rc = -E2BIG;
				break;
			}
			depth++;
			width[depth] = 0;
			is_map[depth] = t == YAML_MAPPING_START_EVENT;
		} else if ((t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) &&
			   depth > 0) {
			depth--;
		}
	}
	yaml_parser_delete(&p);
	return rc;
}

int ycfg_load_string(struct ycfg *y, const char *name, const char *text, size_t len,
		     struct diag_list *diags)
{
	memset(y, 0, sizeof(*y));
	y->diags = diags;
	y->file = strdup(name ? name : "<string>");
	if (!y->file)
		return -ENOMEM;

	int rc = check_structure(y, text, len);
	if (rc)
		return rc;
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		diag_add(diags, DIAG_ERROR, y->file, 0, 0, "", "yaml-memory",
			 "cannot initialise the YAML parser");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &y->doc)) {
		rc = parse_error(y, &p);
		goto delete_parser;
	}
	y->loaded = true;

	/* One document per file: a second one would be silently ignored otherwise. */
	yaml_document_t extra;
	if (!yaml_parser_load(&p, &extra)) {
		rc = parse_error(y, &p);
		goto delete_parser;
	}
	yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
	if (extra_root) {
		diag_add(diags, DIAG_ERROR, y->file, (int)extra_root->start_mark.line + 1,
			 (int)extra_root->start_mark.column + 1, "", "multiple-documents",
			 "only one YAML document per file is allowed; remove the second '---'");
		rc = -EINVAL;
	}
	yaml_document_delete(&extra);

delete_parser:
	yaml_parser_delete(&p);
	return rc;
}

int ycfg_read_file(const char *path, char **buf, size_t *len, struct diag_list *diags)
{
	struct fsafe_err e;
	int rc = fsafe_read_all(path, YCFG_MAX_FILE_BYTES, YCFG_MAX_LINE, buf, len, &e);
	if (rc)
		diag_add(diags, DIAG_ERROR, path, e.line, 0, "", "file", "%s", e.msg);
	return rc;
}

int ycfg_load_file(struct ycfg *y, const char *path, struct diag_list *diags)
{
	char *buf;
	size_t len;
	int rc = ycfg_read_file(path, &buf, &len, diags);

	if (rc) {
		memset(y, 0, sizeof(*y));
		y->diags = diags;
		y->file = strdup(path);
		return rc;
	}
	rc = ycfg_load_string(y, path, buf, len, diags);
	free(buf);
	return rc;
}

void ycfg_fini(struct ycfg *y)
{
	if (y->loaded)
		yaml_document_delete(&y->doc);
	y->loaded = false;
	free(y->file);
	y->file = NULL;
}

yaml_node_t *ycfg_root(struct ycfg *y)
{
	return y->loaded ? yaml_document_get_root_node(&y->doc) : NULL;
}

static const char *node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		return "a scalar";
	default:
		return "nothing";
	}
}

/* Short, printable rendering of what the user wrote, for "got ..." messages. */
static const char *describe(const yaml_node_t *n, char *buf, size_t len)
{
	if (n->type != YAML_SCALAR_NODE) {
		snprintf(buf, len, "%s", node_kind(n));
		return buf;
	}
	const char *v = (const char *)n->data.scalar.value;
	size_t vl = n->data.scalar.length;
	if (vl == 0) {
		snprintf(buf, len, "an empty value");
		return buf;
	}
	bool quoted = n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
		      n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	char shown[64];
	size_t k = 0;
	for (size_t i = 0; i < vl && k + 4 < sizeof(shown); i++)
		shown[k++] = (v[i] == '\n' || v[i] == '\0') ? ' ' : v[i];
	if (vl > k)
		shown[k++] = '.', shown[k++] = '.', shown[k++] = '.';
	shown[k] = '\0';
	snprintf(buf, len, quoted ? "the quoted string '%s'" : "'%s'", shown);
	return buf;
}

bool ycfg_is_map(struct ycfg *y, yaml_node_t *n, const char *path)
{
	if (!n)
		return false;
	if (n->type == YAML_MAPPING_NODE)
		return true;
	char got[96];
	ycfg_error(y, n, path, "type", "expected a mapping (key: value lines), got %s",
		   describe(n, got, sizeof(got)));
	return false;
}

bool ycfg_is_seq(struct ycfg *y, yaml_node_t *n, const char *path)
{
	if (!n)
		return false;
	if (n->type == YAML_SEQUENCE_NODE)
		return true;
	char got[96];
	ycfg_error(y, n, path, "type", "expected a list ('- item' lines or [a, b]), got %s",
		   describe(n, got, sizeof(got)));
	return false;
}

size_t ycfg_seq_len(yaml_node_t *seq)
{
	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return 0;
	return (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

yaml_node_t *ycfg_seq_at(struct ycfg *y, yaml_node_t *seq, size_t i)
{
	if (i >= ycfg_seq_len(seq))
		return NULL;
	return yaml_document_get_node(&y->doc, seq->data.sequence.items.start[i]);
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static size_t levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return SIZE_MAX;
	size_t prev[64], cur[64];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

const char *ycfg_closest(const char *word, const char *const *names)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (size_t i = 0; names[i]; i++) {
		size_t d = levenshtein(word, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	size_t wl = strlen(word);
	size_t limit = wl <= 3 ? 1 : (wl <= 8 ? 2 : 3);
	return best_d <= limit ? best : NULL;
}

struct key_ref {
	const char *name;
	size_t idx;
};

static int key_ref_cmp(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* first[i]: the index of the first pair with pair i's key (i itself when it
 * is the first). Sorting, not comparing each key with every earlier one:
 * 40k keys stay milliseconds. NULL on no memory (duplicates then go
 * unreported; the readers take the first). */
static size_t *first_of_keys(struct ycfg *y, const yaml_node_pair_t *pairs, size_t n)
{
	size_t *first = malloc((n ? n : 1) * sizeof(*first));
	struct key_ref *refs = malloc((n ? n : 1) * sizeof(*refs));
	size_t m = 0;
	if (!first || !refs) {
		free(first);
		free(refs);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		first[i] = i;
		yaml_node_t *k = yaml_document_get_node(&y->doc, pairs[i].key);
		if (k && k->type == YAML_SCALAR_NODE)
			refs[m++] = (struct key_ref){ scalar(k), i };
	}
	qsort(refs, m, sizeof(*refs), key_ref_cmp);
	for (size_t j = 1; j < m; j++)
		if (!strcmp(refs[j].name, refs[j - 1].name))
			first[refs[j].idx] = first[refs[j - 1].idx];
	free(refs);
	return first;
}

void ycfg_format_unknown_key(char *out, size_t len, const char *name, const char *const *allowed)
{
	char names[512];
	const char *sug = ycfg_closest(name, allowed);
	if (sug)
		snprintf(out, len, "unknown key '%s' (did you mean '%s'?); allowed: %s", name, sug,
			 strjoin(names, sizeof(names), allowed, ", "));
	else
		snprintf(out, len, "unknown key '%s'; allowed: %s", name,
			 strjoin(names, sizeof(names), allowed, ", "));
}

int ycfg_check_keys(struct ycfg *y, yaml_node_t *map, const char *path,
		    const char *const *allowed)
{
	if (!map)
		return 0;
	if (!ycfg_is_map(y, map, path))
		return 1;
	int problems = 0;
	char kp[256], names[900];
	yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
	size_t *first = first_of_keys(y, pairs, (size_t)(map->data.mapping.pairs.top - pairs));
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&y->doc, p->key);
		if (!k || k->type != YAML_SCALAR_NODE) {
			ycfg_error(y, k, path, "key-type", "keys must be plain names, got %s",
				   k ? node_kind(k) : "nothing");
			problems++;
			continue;
		}
		const char *name = scalar(k);
		bool known = false;
		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], name) == 0)
				known = true;
		if (!known && y->diags && y->diags->n >= DIAG_MAX) {
			problems++; /* the list is full: no suggestion to compute */
		} else if (!known) {
			ycfg_format_unknown_key(names, sizeof(names), name, allowed);
			ycfg_error(y, k, ycfg_join(kp, sizeof(kp), path, name), "unknown-key", "%s",
				   names);
			problems++;
		}
		size_t i = (size_t)(p - map->data.mapping.pairs.start);
		if (first && first[i] != i) {
			yaml_node_t *k0 = yaml_document_get_node(&y->doc, pairs[first[i]].key);
			ycfg_error(y, k, ycfg_join(kp, sizeof(kp), path, name), "duplicate-key",
				   "duplicate key '%s' (first given at line %d:%d)", name,
				   (int)k0->start_mark.line + 1, (int)k0->start_mark.column + 1);
			problems++;
		}
	}
	free(first);
	return problems;
}

yaml_node_t *ycfg_get(struct ycfg *y, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&y->doc, p->key);
		if (k && k->type == YAML_SCALAR_NODE && strcmp(scalar(k), key) == 0)
			return yaml_document_get_node(&y->doc, p->value);
	}
	return NULL;
}

/* Unit implied by the key's suffix (DEVELOPERS.md naming), for range messages. */
const char *ycfg_key_unit(const char *key)
{
	static const struct {
		const char *suffix, *unit;
	} units[] = {
		{"_mc", " mC"},	   {"_c", " C"},	{"_ms", " ms"},	  {"_us", " us"},
		{"_s", " s"},	   {"_mw", " mW"},	{"_w", " W"},	  {"_khz", " kHz"},
		{"_mhz", " MHz"}, {"_rps", " req/s"}, {"_pct", " %"},  {"_tokens", " tokens"},
		{"_j", " J"},	   {"_gb", " GB"},
	};
	if (!key)
		return "";
	size_t kl = strlen(key);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);
		if (kl > sl && strcmp(key + kl - sl, units[i].suffix) == 0)
			return units[i].unit;
	}
	return "";
}

static bool is_quoted(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
	       n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
}

/* Shared checks for a scalar that must hold a number/boolean: plain, not empty. */
static bool plain_scalar(struct ycfg *y, const yaml_node_t *n, const char *path,
			 const char *what)
{
	char got[96];
	if (n->type != YAML_SCALAR_NODE || is_quoted(n) || n->data.scalar.length == 0 ||
	    strlen(scalar(n)) != n->data.scalar.length) {
		ycfg_error(y, n, path, "type", "expected %s, got %s%s", what,
			   describe(n, got, sizeof(got)),
			   n->type == YAML_SCALAR_NODE && is_quoted(n) ? " (remove the quotes)" : "");
		return false;
	}
	return true;
}

void ycfg_format_range(char *out, size_t len, const char *text, double min, double max,
		       const char *unit)
{
	if (isinf(max))
		snprintf(out, len, "%s is out of range; allowed >= %.10g%s", text, min, unit);
	else if (isinf(min))
		snprintf(out, len, "%s is out of range; allowed <= %.10g%s", text, max, unit);
	else
		snprintf(out, len, "%s is out of range; allowed %.10g..%.10g%s", text, min, max, unit);
}

static int node_double(struct ycfg *y, const yaml_node_t *n, const char *path, const char *unit,
		       double min, double max, double *out)
{
	if (!plain_scalar(y, n, path, "a number"))
		return -EINVAL;
	const char *s = scalar(n);
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	char got[96];
	if (end == s || *end != '\0') {
		ycfg_error(y, n, path, "type", "expected a number, got %s",
			   describe(n, got, sizeof(got)));
		return -EINVAL;
	}
	/* ERANGE on underflow (4.9e-324, 1e-400) is a tiny finite value,
	 * checked against the range like any other; only overflow is not finite. */
	if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1.0)) {
		ycfg_error(y, n, path, "range", "expected a finite number, got %s",
			   describe(n, got, sizeof(got)));
		return -EINVAL;
	}
	if (v < min || v > max) {
		char msg[256];
		ycfg_format_range(msg, sizeof(msg), s, min, max, unit);
		ycfg_error(y, n, path, "range", "%s", msg);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int ycfg_node_double(struct ycfg *y, yaml_node_t *n, const char *path, double min, double max,
		     double *out)
{
	/* The unit comes from the last key of the path, as for ycfg_double. */
	const char *dot = path ? strrchr(path, '.') : NULL;
	return node_double(y, n, path, ycfg_key_unit(dot ? dot + 1 : path), min, max, out);
}

/* Looks key up; reports a missing required key at the mapping. Returns the
 * value node, or NULL with *rc set (0 absent-optional, -EINVAL otherwise). */
static yaml_node_t *lookup(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
			   bool required, int *rc)
{
	*rc = 0;
	yaml_node_t *n = ycfg_get(y, map, key);
	if (!n && required) {
		char kp[256];
		ycfg_error(y, map, ycfg_join(kp, sizeof(kp), path, key), "missing-key",
			   "missing required key '%s'", key);
		*rc = -EINVAL;
	}
	return n;
}

int ycfg_double(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
		bool required, double min, double max, double *out)
{
	int rc;
	yaml_node_t *n = lookup(y, map, path, key, required, &rc);
	if (!n)
		return rc;
	char kp[256];
	return node_double(y, n, ycfg_join(kp, sizeof(kp), path, key), ycfg_key_unit(key), min, max,
			   out);
}

int ycfg_int(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
	     bool required, long long min, long long max, long long *out)
{
	int rc;
	yaml_node_t *n = lookup(y, map, path, key, required, &rc);
	if (!n)
		return rc;
	char kp[256], got[96];
	ycfg_join(kp, sizeof(kp), path, key);
	if (!plain_scalar(y, n, kp, "an integer"))
		return -EINVAL;
	const char *s = scalar(n);
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end != '\0') {
		ycfg_error(y, n, kp, "type", "expected an integer, got %s",
			   describe(n, got, sizeof(got)));
		return -EINVAL;
	}
	const char *unit = ycfg_key_unit(key);
	if (errno == ERANGE || v < min || v > max) {
		if (max == LLONG_MAX)
			ycfg_error(y, n, kp, "range", "%s is out of range; allowed >= %lld%s", s, min,
				   unit);
		else if (min == LLONG_MIN)
			ycfg_error(y, n, kp, "range", "%s is out of range; allowed <= %lld%s", s, max,
				   unit);
		else
			ycfg_error(y, n, kp, "range", "%s is out of range; allowed %lld..%lld%s", s,
				   min, max, unit);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int ycfg_bool(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
	      bool required, bool *out)
{
	int rc;
	yaml_node_t *n = lookup(y, map, path, key, required, &rc);
	if (!n)
		return rc;
	char kp[256], got[96];
	ycfg_join(kp, sizeof(kp), path, key);
	if (!plain_scalar(y, n, kp, "a boolean (true/false/yes/no)"))
		return -EINVAL;
	const char *s = scalar(n);
	if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0) {
		*out = true;
		return 0;
	}
	if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0) {
		*out = false;
		return 0;
	}
	ycfg_error(y, n, kp, "type", "expected a boolean (true/false/yes/no), got %s",
		   describe(n, got, sizeof(got)));
	return -EINVAL;
}

int ycfg_string(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
		bool required, char *buf, size_t len)
{
	int rc;
	yaml_node_t *n = lookup(y, map, path, key, required, &rc);
	if (!n)
		return rc;
	char kp[256], got[96];
	ycfg_join(kp, sizeof(kp), path, key);
	if (n->type != YAML_SCALAR_NODE) {
		ycfg_error(y, n, kp, "type", "expected a string, got %s",
			   describe(n, got, sizeof(got)));
		return -EINVAL;
	}
	size_t vl = n->data.scalar.length;
	if (strlen(scalar(n)) != vl) {
		ycfg_error(y, n, kp, "type", "string contains a NUL character");
		return -EINVAL;
	}
	if (vl >= len) {
		ycfg_error(y, n, kp, "range", "string is %zu characters long; at most %zu allowed",
			   vl, len - 1);
		return -EINVAL;
	}
	memcpy(buf, scalar(n), vl + 1);
	return 0;
}

int ycfg_enum(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
	      bool required, const char *const *names, int *out)
{
	int rc;
	yaml_node_t *n = lookup(y, map, path, key, required, &rc);
	if (!n)
		return rc;
	char kp[256], got[96], list[512];
	ycfg_join(kp, sizeof(kp), path, key);
	if (n->type != YAML_SCALAR_NODE) {
		ycfg_error(y, n, kp, "type", "expected one of %s, got %s",
			   strjoin(list, sizeof(list), names, ", "), describe(n, got, sizeof(got)));
		return -EINVAL;
	}
	const char *s = scalar(n);
	for (int i = 0; names[i]; i++) {
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return 0;
		}
	}
	const char *sug = ycfg_closest(s, names);
	if (sug)
		ycfg_error(y, n, kp, "enum", "unknown value %s (did you mean '%s'?); valid: %s",
			   describe(n, got, sizeof(got)), sug, strjoin(list, sizeof(list), names, ", "));
	else
		ycfg_error(y, n, kp, "enum", "unknown value %s; valid: %s",
			   describe(n, got, sizeof(got)), strjoin(list, sizeof(list), names, ", "));
	return -EINVAL;
}

int ycfg_resolve_path(const struct ycfg *y, const char *rel, char *buf, size_t len)
{
	int w;
	const char *slash = y->file ? strrchr(y->file, '/') : NULL;
	if (rel[0] == '/' || !slash)
		w = snprintf(buf, len, "%s", rel);
	else
		w = snprintf(buf, len, "%.*s/%s", (int)(slash - y->file), y->file, rel);
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	return 0;
}
