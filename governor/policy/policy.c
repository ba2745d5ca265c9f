/* Policy loader (the language: docs/policy.md). Strict: unknown keys, wrong
 * types, out-of-range values and contradictions between keys are errors with
 * file:line:col, the key path and what is allowed; every problem of the file
 * is reported in one pass. Legal but risky settings are warnings. Parse +
 * validate into a new object; the caller's current policy is untouched on
 * failure.
 *
 * The loader accepts a subset of what policies/schema/policy.schema.json
 * accepts after a YAML 1.1 reader (PyYAML, the YAML language server) has
 * turned the file into JSON: strings must not be plain scalars such readers
 * take for a number, boolean, null or date, and numbers must be written in a
 * form they read as numbers (1000 or 1.0e+3, not 1e3; no leading zeros). */
#include "governor/policy/policy.h"

#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strjoin.h"
#include "common/ycfg.h"

/* The hardware slowdown is at least this far above the ceiling, or a warning:
 * one control period of a step load can climb ~2 C (docs/policy.md). */
#define CEILING_MARGIN_C 2.0
#define SHORT_PERIOD_MS 50

/* A section's allowed keys come from the key table (policy_keys.c). */
#define SECTION_MAX_KEYS 32


struct ctx {
	struct ycfg *y;
	struct policy *p;
	size_t first; /* index of this load's first diag */
	yaml_node_t *root, *meta, *objective, *control, *sla, *thermal, *power, *freq, *prec,
		*qual, *env, *safe, *rb, *trig, *lkg, *tele;
	/* Where each slice was named (for messages about it); NULL if not there. */
	yaml_node_t *slice_prec[POLICY_MAX_SLICES], *slice_qual[POLICY_MAX_SLICES];
};

static void msg_at(struct ctx *c, enum diag_sev sev, const yaml_node_t *n, const char *path,
		   const char *code, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void msg_at(struct ctx *c, enum diag_sev sev, const yaml_node_t *n, const char *path,
		   const char *code, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sev == DIAG_ERROR)
		ycfg_error(c->y, n, path, code, "%s", msg);
	else
		ycfg_warning(c->y, n, path, code, "%s", msg);
}

/* The node of map.key, else the map, else the root: where a message about a
 * key (maybe left at its default) points. */
static yaml_node_t *where(struct ctx *c, yaml_node_t *map, const char *key)
{
	yaml_node_t *n = key ? ycfg_get(c->y, map, key) : NULL;
	return n ? n : map ? map : c->root;
}

static bool given(struct ctx *c, yaml_node_t *map, const char *key)
{
	return ycfg_get(c->y, map, key) != NULL;
}

/* Whether this load already reported an error at path (then checks that
 * combine it with other keys stay quiet rather than judge a default). */
static bool failed(struct ctx *c, const char *path)
{
	const struct diag_list *l = c->y->diags;
	for (size_t i = c->first; i < l->n; i++)
		if (l->v[i].sev == DIAG_ERROR && !strcmp(l->v[i].path, path))
			return true;
	return false;
}

static bool any_failed(struct ctx *c, const char *a, const char *b)
{
	return failed(c, a) || (b && failed(c, b));
}

/* ---- scalars, in forms a YAML 1.1 reader sees the same way ---- */

static bool is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static bool match(const char *re, const char *s)
{
	regex_t r;
	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB))
		return false;
	bool m = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return m;
}

/* PyYAML's implicit resolvers (YAML 1.1): what a plain scalar becomes there
 * if not a string. NULL: a string. */
static const char *yaml11_type(const char *s)
{
	if (match("^(~|null|Null|NULL|)$", s))
		return "null";
	if (match("^(yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
		  s))
		return "a boolean";
	if (match("^[-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)$",
		  s))
		return "an integer";
	if (match("^([-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+][0-9]+)?|\\.[0-9][0-9_]*([eE][-+][0-9]+)?|"
		  "[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN))$",
		  s))
		return "a number";
	if (match("^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ]|$)", s))
		return "a date";
	return NULL;
}

/* A number both this loader (strtod) and a YAML 1.1 reader take as the same
 * number. */
static bool portable_number(const char *s, bool integer)
{
	if (integer)
		return match("^[-+]?(0|[1-9][0-9]*)$", s);
	return match("^[-+]?(0|[1-9][0-9]*)$", s) ||
	       match("^([-+]?[0-9]+\\.[0-9]*([eE][-+][0-9]+)?|\\.[0-9]+([eE][-+][0-9]+)?)$", s);
}

/* Numbers strtod would accept but a YAML 1.1 reader would not read alike. */
static bool number_form_ok(struct ctx *c, yaml_node_t *n, const char *path, bool integer)
{
	if (!n || !is_plain(n))
		return true; /* ycfg reports quoting and type */
	const char *s = (const char *)n->data.scalar.value;
	char *end;
	errno = 0;
	(void)strtod(s, &end);
	/* 10.0 for an integer key: ycfg says "expected an integer". */
	if (end == s || *end || portable_number(s, integer) || (integer && portable_number(s, false)))
		return true;
	msg_at(c, DIAG_ERROR, n, path, "number-form",
	       "'%s' is read differently by YAML 1.1 tools (editors, the JSON Schema check); write "
	       "%s",
	       s, integer ? "a plain decimal integer without leading zeros"
			  : "plain decimal such as 1000, 0.5 or 1.0e+3");
	return false;
}

/* Optional number at map.key within [lo, hi]; true if present and valid. */
static bool num(struct ctx *c, yaml_node_t *map, const char *path, const char *key, double lo,
		double hi, double *out)
{
	char kp[256];
	yaml_node_t *n = ycfg_get(c->y, map, key);
	if (!n)
		return false;
	if (!number_form_ok(c, n, ycfg_join(kp, sizeof(kp), path, key), false))
		return false;
	return ycfg_double(c->y, map, path, key, false, lo, hi, out) == 0;
}

/* Same with a unit the key's suffix does not tell (tokens/s). */
static bool num_unit(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		     double lo, double hi, const char *unit, double *out)
{
	char kp[256];
	double v;
	if (!num(c, map, path, key, -INFINITY, INFINITY, &v))
		return false;
	if (v < lo || v > hi) {
		yaml_node_t *n = ycfg_get(c->y, map, key);
		msg_at(c, DIAG_ERROR, n, ycfg_join(kp, sizeof(kp), path, key), "range",
		       "%s is out of range; allowed %.10g..%.10g %s", (const char *)n->data.scalar.value,
		       lo, hi, unit);
		return false;
	}
	*out = v;
	return true;
}

static bool uint_key(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		     long long lo, long long hi, uint32_t *out)
{
	char kp[256];
	long long v;
	yaml_node_t *n = ycfg_get(c->y, map, key);
	if (!n)
		return false;
	if (!number_form_ok(c, n, ycfg_join(kp, sizeof(kp), path, key), true))
		return false;
	if (ycfg_int(c->y, map, path, key, false, lo, hi, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool bool_key(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		     bool *out)
{
	char kp[256];
	yaml_node_t *n = ycfg_get(c->y, map, key);
	if (!n)
		return false;
	/* ycfg takes any case; YAML 1.1 only these spellings. */
	if (is_plain(n) && !match("^(true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO)$",
				  (const char *)n->data.scalar.value)) {
		msg_at(c, DIAG_ERROR, n, ycfg_join(kp, sizeof(kp), path, key), "type",
		       "expected a boolean (true/false), got '%s'", (const char *)n->data.scalar.value);
		return false;
	}
	return ycfg_bool(c->y, map, path, key, false, out) == 0;
}

/* A string scalar node: not something YAML 1.1 reads as another type, not
 * empty, shorter than len. */
static bool text_node(struct ctx *c, yaml_node_t *n, const char *path, char *buf, size_t len)
{
	if (n->type != YAML_SCALAR_NODE) {
		msg_at(c, DIAG_ERROR, n, path, "type", "expected a string, got %s",
		       n->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
		return false;
	}
	const char *s = (const char *)n->data.scalar.value;
	size_t vl = n->data.scalar.length;
	const char *t = is_plain(n) ? yaml11_type(s) : NULL;
	if (t && !vl) {
		msg_at(c, DIAG_ERROR, n, path, "type", "expected a non-empty string, got nothing");
		return false;
	}
	if (t) {
		msg_at(c, DIAG_ERROR, n, path, "type",
		       "expected a string, got '%.60s', which YAML reads as %s; quote it: \"%.60s\"", s,
		       t, s);
		return false;
	}
	if (strlen(s) != vl) {
		msg_at(c, DIAG_ERROR, n, path, "type", "string contains a NUL character");
		return false;
	}
	if (!vl) {
		msg_at(c, DIAG_ERROR, n, path, "type", "expected a non-empty string");
		return false;
	}
	if (vl >= len) {
		msg_at(c, DIAG_ERROR, n, path, "range", "string is %zu characters long; at most %zu allowed",
		       vl, len - 1);
		return false;
	}
	memcpy(buf, s, vl + 1);
	return true;
}

static bool text(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		 bool required, char *buf, size_t len)
{
	char kp[256];
	yaml_node_t *n = ycfg_get(c->y, map, key);
	ycfg_join(kp, sizeof(kp), path, key);
	if (!n) {
		if (required)
			msg_at(c, DIAG_ERROR, map ? map : c->root, kp, "missing-key",
			       "missing required key '%s'", key);
		return false;
	}
	return text_node(c, n, kp, buf, len);
}

/* Names that label runs, directories and slices: no path separators. */
static bool name_ok(const char *s)
{
	return match("^[A-Za-z0-9][A-Za-z0-9._-]*$", s);
}

static bool enum_key(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		     const char *const *names, int *out)
{
	return ycfg_get(c->y, map, key) &&
	       ycfg_enum(c->y, map, path, key, false, names, out) == 0;
}

/* A list of enum names, each at most once, at least one: a bit set. */
static bool enum_set(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		     const char *const *names, uint32_t *out)
{
	char kp[256], ip[256];
	yaml_node_t *n = ycfg_get(c->y, map, key);
	if (!n)
		return false;
	ycfg_join(kp, sizeof(kp), path, key);
	if (!ycfg_is_seq(c->y, n, kp))
		return false;
	size_t len = ycfg_seq_len(n);
	if (!len) {
		msg_at(c, DIAG_ERROR, n, kp, "range", "expected at least one item");
		return false;
	}
	uint32_t set = 0;
	bool ok = true;
	for (size_t i = 0; i < len; i++) {
		yaml_node_t *it = ycfg_seq_at(c->y, n, i);
		ycfg_index(ip, sizeof(ip), kp, i);
		/* ycfg_enum reads a key: wrap the item in a one-key lookup by hand. */
		const char *s = it && it->type == YAML_SCALAR_NODE ? (const char *)it->data.scalar.value
								    : NULL;
		int k = -1;
		for (int j = 0; s && names[j]; j++)
			if (!strcmp(names[j], s))
				k = j;
		if (k < 0) {
			char list[128];
			strjoin(list, sizeof(list), names, ", ");
			msg_at(c, DIAG_ERROR, it, ip, "enum", "unknown value '%.60s'; valid: %s",
			       s ? s : "(not a scalar)", list);
			ok = false;
			continue;
		}
		if (set & (1u << k)) {
			msg_at(c, DIAG_ERROR, it, ip, "duplicate", "'%s' is listed twice", s);
			ok = false;
			continue;
		}
		set |= 1u << k;
	}
	if (ok)
		*out = set;
	return ok;
}

/* A list of strings (owners, version patterns), at most max, each < len. */
static size_t text_list(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
			size_t max, char *buf, size_t len)
{
	char kp[256], ip[256];
	yaml_node_t *n = ycfg_get(c->y, map, key);
	if (!n)
		return 0;
	ycfg_join(kp, sizeof(kp), path, key);
	if (!ycfg_is_seq(c->y, n, kp))
		return 0;
	size_t cnt = ycfg_seq_len(n);
	if (!cnt) {
		msg_at(c, DIAG_ERROR, n, kp, "range",
		       "expected at least one item (leave the key out for none)");
		return 0;
	}
	if (cnt > max) {
		msg_at(c, DIAG_ERROR, n, kp, "too-many", "%zu items; at most %zu allowed", cnt, max);
		return 0;
	}
	size_t got = 0;
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_t *it = ycfg_seq_at(c->y, n, i);
		if (text_node(c, it, ycfg_index(ip, sizeof(ip), kp, i), buf + got * len, len))
			got++;
	}
	return got;
}

/* The names of section's keys in the key table, NULL-terminated in buf
 * (sla's latency rows are common/sla.h's). */
static const char *const *allowed_keys(const char *section, const char **buf, size_t len)
{
	const struct policy_key *k[SECTION_MAX_KEYS];
	size_t n = policy_section_keys(section, k, SECTION_MAX_KEYS), o = 0;
	assert(n <= SECTION_MAX_KEYS);
	for (size_t i = 0; i < n && o + 1 < len; i++) {
		if (k[i]->type != POLICY_KEY_SLA_ROWS) {
			buf[o++] = policy_key_name(k[i]);
			continue;
		}
		for (size_t r = 0; r < SLA_N_ROWS && o + 1 < len; r++)
			buf[o++] = sla_rows[r].key;
	}
	assert(o + 1 < len);
	buf[o] = NULL;
	return buf;
}

/* Checks map's keys against section's (a key path, "quality.slices.*" for
 * any slice); path names it in messages. */
static void check_keys(struct ctx *c, yaml_node_t *map, const char *section, const char *path)
{
	const char *buf[SECTION_MAX_KEYS + SLA_N_ROWS + 1];
	ycfg_check_keys(c->y, map, path, allowed_keys(section, buf, sizeof(buf) / sizeof(buf[0])));
}

/* A section: absent is fine; present must be a mapping with known keys. */
static yaml_node_t *section(struct ctx *c, yaml_node_t *parent, const char *ppath,
			    const char *key)
{
	char kp[256];
	yaml_node_t *n = ycfg_get(c->y, parent, key);
	if (!n)
		return NULL;
	ycfg_join(kp, sizeof(kp), ppath, key);
	if (!ycfg_is_map(c->y, n, kp))
		return NULL;
	check_keys(c, n, kp, kp);
	return n;
}

/* Whether the key's suffix tells its row's unit (ycfg_key_unit, what a
 * range message names by default); min_tokens_per_s ends in _s but counts
 * tokens/s, so its messages name the row's unit. */
static bool unit_in_name(const struct policy_key *k)
{
	const char *told = ycfg_key_unit(policy_key_name(k));
	return *told ? !strcmp(told + 1, k->unit) : !k->unit[0];
}

/* Every number, boolean, enum, set, text and list of texts of section
 * (table rows) found in map, checked against its row and stored into base
 * (struct policy, or the slice's struct policy_slice); path names the map
 * in messages. Rows without a reader here (sections, slice maps, the name,
 * the controller) are their sections' own code's. */
static void read_scalars(struct ctx *c, yaml_node_t *map, const char *section, const char *path,
			 void *base)
{
	const struct policy_key *k[SECTION_MAX_KEYS];
	size_t n = policy_section_keys(section, k, SECTION_MAX_KEYS);
	for (size_t i = 0; i < n; i++) {
		const char *name = policy_key_name(k[i]);
		void *at = (char *)base + k[i]->off;
		uint32_t u;
		switch (k[i]->type) {
		case POLICY_KEY_NUMBER:
			if (unit_in_name(k[i]))
				num(c, map, path, name, k[i]->lo, k[i]->hi, at);
			else
				num_unit(c, map, path, name, k[i]->lo, k[i]->hi, k[i]->unit, at);
			break;
		case POLICY_KEY_UINT:
			uint_key(c, map, path, name, (long long)k[i]->lo, (long long)k[i]->hi, at);
			break;
		case POLICY_KEY_INT64:
			if (uint_key(c, map, path, name, (long long)k[i]->lo, (long long)k[i]->hi, &u))
				*(int64_t *)at = u;
			break;
		case POLICY_KEY_BOOL:
			bool_key(c, map, path, name, at);
			break;
		case POLICY_KEY_ENUM:
			enum_key(c, map, path, name, k[i]->names, at);
			break;
		case POLICY_KEY_SET:
			enum_set(c, map, path, name, k[i]->names, at);
			break;
		case POLICY_KEY_TEXT:
			if (k[i]->size)
				text(c, map, path, name, false, at, k[i]->size);
			break;
		case POLICY_KEY_LIST:
			if (k[i]->size)
				*(size_t *)((char *)base + k[i]->count_off) =
					text_list(c, map, path, name, k[i]->max_items, at, k[i]->size);
			break;
		default: /* read by the section's own code */
			break;
		}
	}
}

/* ---- sections ---- */

static void read_metadata(struct ctx *c)
{
	yaml_node_t *m = c->meta = section(c, c->root, "", "metadata");
	if (!m)
		return;
	read_scalars(c, m, "metadata", "metadata", c->p);
	yaml_node_t *v = section(c, m, "metadata", "validated_with");
	if (v)
		read_scalars(c, v, "metadata.validated_with", "metadata.validated_with", c->p);
}

static void read_objective(struct ctx *c)
{
	yaml_node_t *o = c->objective = section(c, c->root, "", "objective");
	if (o)
		read_scalars(c, o, "objective", "objective", c->p);
}

/* control.params as located raw values: each a plain number, its name and
 * range left to policy_bind_controller() (the controller's table). */
static void read_params(struct ctx *c, yaml_node_t *params)
{
	struct policy *p = c->p;
	char kp[256];

	if (!ycfg_is_map(c->y, params, "control.params"))
		return;
	p->control.params_line = (int)params->start_mark.line + 1;
	p->control.params_col = (int)params->start_mark.column + 1;
	/* Every key given is allowed here: this reports duplicates and keys
	 * that are not names; binding reports the unknown ones. */
	const char *given_keys[POLICY_MAX_PARAMS + 1];
	size_t ng = 0;
	for (yaml_node_pair_t *pr = params->data.mapping.pairs.start;
	     pr < params->data.mapping.pairs.top && ng < POLICY_MAX_PARAMS; pr++) {
		yaml_node_t *k = yaml_document_get_node(&c->y->doc, pr->key);
		if (k && k->type == YAML_SCALAR_NODE)
			given_keys[ng++] = (const char *)k->data.scalar.value;
	}
	given_keys[ng] = NULL;
	ycfg_check_keys(c->y, params, "control.params", given_keys);
	for (yaml_node_pair_t *pr = params->data.mapping.pairs.start;
	     pr < params->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&c->y->doc, pr->key);
		yaml_node_t *n = yaml_document_get_node(&c->y->doc, pr->value);
		if (!k || k->type != YAML_SCALAR_NODE || !n)
			continue;
		const char *name = (const char *)k->data.scalar.value;
		bool dup = false;
		for (size_t i = 0; i < p->control.n_params; i++)
			dup |= !strcmp(p->control.params[i].name, name);
		if (dup)
			continue; /* reported by ycfg_check_keys */
		if (p->control.n_params == POLICY_MAX_PARAMS || strlen(name) >= sizeof(p->control.params[0].name)) {
			msg_at(c, DIAG_ERROR, k, "control.params", "too-many",
			       "at most %d parameters of at most %zu characters", POLICY_MAX_PARAMS,
			       sizeof(p->control.params[0].name) - 1);
			continue;
		}
		ycfg_join(kp, sizeof(kp), "control.params", name);
		struct policy_param *pp = &p->control.params[p->control.n_params++];
		snprintf(pp->name, sizeof(pp->name), "%s", name);
		snprintf(pp->text, sizeof(pp->text), "%s",
			 n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : "");
		pp->key_line = (int)k->start_mark.line + 1;
		pp->key_col = (int)k->start_mark.column + 1;
		pp->line = (int)n->start_mark.line + 1;
		pp->col = (int)n->start_mark.column + 1;
		pp->value = NAN;
		/* reported here when not a number; binding skips it then */
		pp->is_number = number_form_ok(c, n, kp, false) &&
				!ycfg_node_double(c->y, n, kp, -INFINITY, INFINITY, &pp->value);
	}
}

static void read_control(struct ctx *c)
{
	struct policy *p = c->p;
	yaml_node_t *n = ycfg_get(c->y, c->root, "control");

	if (!n) {
		msg_at(c, DIAG_ERROR, c->root, "control", "missing-key",
		       "'control' is required (control: {controller: NAME})");
		return;
	}
	if (!ycfg_is_map(c->y, n, "control"))
		return;
	c->control = n;
	check_keys(c, n, "control", "control");
	if (text(c, n, "control", "controller", true, p->control.controller,
		 sizeof(p->control.controller))) {
		/* Whether it names a controller is binding's question
		 * (policy_bind_controller): the loader knows no registry. */
		yaml_node_t *cn = ycfg_get(c->y, n, "controller");
		p->control.controller_line = (int)cn->start_mark.line + 1;
		p->control.controller_col = (int)cn->start_mark.column + 1;
	}
	read_scalars(c, n, "control", "control", p);
	yaml_node_t *params = ycfg_get(c->y, n, "params");
	if (params)
		read_params(c, params);
}

static void read_sla(struct ctx *c)
{
	struct policy *p = c->p;
	/* The latency targets follow sla_rows[], so a new target row is one edit. */
	yaml_node_t *n = c->sla = section(c, c->root, "", "sla");
	if (!n)
		return;
	read_scalars(c, n, "sla", "sla", p);
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		num(c, n, "sla", sla_rows[i].key, 0, sla_rows[i].max_ms, &p->sla.latency_ms[i]);
}

static void read_limits(struct ctx *c)
{
	struct policy *p = c->p;
	yaml_node_t *n;

	if ((n = c->thermal = section(c, c->root, "", "thermal")))
		read_scalars(c, n, "thermal", "thermal", p);
	if ((n = c->power = section(c, c->root, "", "power")))
		read_scalars(c, n, "power", "power", p);
	if ((n = c->freq = section(c, c->root, "", "frequency")))
		read_scalars(c, n, "frequency", "frequency", p);
	if ((n = c->safe = section(c, c->root, "", "safe_point")))
		read_scalars(c, n, "safe_point", "safe_point", p);
	if ((n = c->tele = section(c, c->root, "", "telemetry")))
		read_scalars(c, n, "telemetry", "telemetry", p);
	/* The default follows the period the file sets. */
	if (!given(c, c->tele, "stale_ms"))
		p->telemetry.stale_ms = policy_default_stale_ms(p->control.period_ms);
}

/* Slice index by name, adding it; -1 (with an error at key) when full or the
 * name is not usable. */
static int slice_index(struct ctx *c, yaml_node_t *key, const char *path, const char *name)
{
	struct policy *p = c->p;
	for (size_t i = 0; i < p->n_slices; i++)
		if (!strcmp(p->slices[i].name, name))
			return (int)i;
	if (strlen(name) >= HAL_NAME_LEN || !name_ok(name)) {
		msg_at(c, DIAG_ERROR, key, path, "slice-name",
		       "slice name '%.60s' is not allowed; use letters, digits, '.', '_' and '-' "
		       "(starting with a letter or digit), at most %d characters",
		       name, HAL_NAME_LEN - 1);
		return -1;
	}
	if (p->n_slices == POLICY_MAX_SLICES) {
		msg_at(c, DIAG_ERROR, key, path, "too-many", "at most %d slices in a policy",
		       POLICY_MAX_SLICES);
		return -1;
	}
	struct policy_slice *s = &p->slices[p->n_slices];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->int8_fraction = s->int8_min_fraction = s->int8_max_fraction = -1;
	s->max_drop = s->confidence = s->shadow_rate = -1;
	s->min_samples = -1;
	s->offline_samples = s->offline_mismatches = 0;
	s->fp8_offline_samples = s->fp8_offline_mismatches = 0;
	return (int)p->n_slices++;
}

/* Iterates a slices mapping: calls fn for each well-formed, first-seen name. */
static void each_slice(struct ctx *c, yaml_node_t *sl, const char *path,
		       void (*fn)(struct ctx *, int idx, yaml_node_t *key, yaml_node_t *val,
				  const char *path))
{
	char kp[256];
	if (!ycfg_is_map(c->y, sl, path))
		return;
	for (yaml_node_pair_t *pr = sl->data.mapping.pairs.start; pr < sl->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = yaml_document_get_node(&c->y->doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(&c->y->doc, pr->value);
		if (!k || k->type != YAML_SCALAR_NODE) {
			msg_at(c, DIAG_ERROR, k ? k : sl, path, "key-type",
			       "slice names must be plain names");
			continue;
		}
		const char *name = (const char *)k->data.scalar.value;
		ycfg_join(kp, sizeof(kp), path, name);
		bool dup = false;
		for (yaml_node_pair_t *q = sl->data.mapping.pairs.start; q < pr && !dup; q++) {
			yaml_node_t *k0 = yaml_document_get_node(&c->y->doc, q->key);
			if (k0 && k0->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)k0->data.scalar.value, name)) {
				msg_at(c, DIAG_ERROR, k, kp, "duplicate-key",
				       "duplicate key '%s' (first given at line %d:%d)", name,
				       (int)k0->start_mark.line + 1, (int)k0->start_mark.column + 1);
				dup = true;
			}
		}
		if (dup)
			continue;
		int idx = slice_index(c, k, kp, name);
		if (idx >= 0)
			fn(c, idx, k, v, kp);
	}
}

static void prec_slice(struct ctx *c, int idx, yaml_node_t *key, yaml_node_t *v, const char *path)
{
	struct policy_slice *s = &c->p->slices[idx];
	c->slice_prec[idx] = key;
	if (v->type == YAML_SCALAR_NODE) {
		/* Shorthand: "code: 0.5" is the slice's int8_fraction. */
		if (number_form_ok(c, v, path, false))
			ycfg_node_double(c->y, v, path, 0, 1, &s->int8_fraction);
		return;
	}
	if (!ycfg_is_map(c->y, v, path))
		return;
	check_keys(c, v, "precision.slices.*", path);
	read_scalars(c, v, "precision.slices.*", path, s);
}

static void qual_slice(struct ctx *c, int idx, yaml_node_t *key, yaml_node_t *v, const char *path)
{
	struct policy_slice *s = &c->p->slices[idx];
	c->slice_qual[idx] = key;
	if (!ycfg_is_map(c->y, v, path))
		return;
	check_keys(c, v, "quality.slices.*", path);
	read_scalars(c, v, "quality.slices.*", path, s);
	static const char *const pre[] = { "", "fp8_" };
	const uint32_t n[] = { s->offline_samples, s->fp8_offline_samples };
	const uint32_t k[] = { s->offline_mismatches, s->fp8_offline_mismatches };
	for (int m = 0; m < 2; m++) {
		if (k[m] <= n[m])
			continue;
		char kp[256], kname[40];
		snprintf(kname, sizeof(kname), "%soffline_mismatches", pre[m]);
		ycfg_join(kp, sizeof(kp), path, kname);
		msg_at(c, DIAG_ERROR, ycfg_get(c->y, v, kname), kp, "range",
		       "%s %u is more than %soffline_samples %u", kname, k[m], pre[m], n[m]);
	}
}

static void read_precision_quality(struct ctx *c)
{
	struct policy *p = c->p;
	yaml_node_t *n, *sl;

	if ((n = c->prec = section(c, c->root, "", "precision"))) {
		read_scalars(c, n, "precision", "precision", p);
		if ((sl = ycfg_get(c->y, n, "slices")))
			each_slice(c, sl, "precision.slices", prec_slice);
	}
	if ((n = c->qual = section(c, c->root, "", "quality"))) {
		read_scalars(c, n, "quality", "quality", p);
		if ((sl = ycfg_get(c->y, n, "slices")))
			each_slice(c, sl, "quality.slices", qual_slice);
	}
}

static void read_envelope(struct ctx *c)
{
	yaml_node_t *n = c->env = section(c, c->root, "", "envelope");
	if (n)
		read_scalars(c, n, "envelope", "envelope", c->p);
}

static void read_rollback(struct ctx *c)
{
	struct policy *p = c->p;
	yaml_node_t *n = c->rb = section(c, c->root, "", "rollback"), *t;
	if (!n)
		return;
	if ((t = c->trig = section(c, n, "rollback", "triggers")))
		read_scalars(c, t, "rollback.triggers", "rollback.triggers", p);
	read_scalars(c, n, "rollback", "rollback", p);
	if ((t = c->lkg = section(c, n, "rollback", "last_known_good"))) {
		read_scalars(c, t, "rollback.last_known_good", "rollback.last_known_good", p);
	}
}

/* ---- contradictions between keys (errors) and risky settings (warnings) ---- */

/* lo_key must not exceed hi_key when both are set (> 0 unless zero_ok). */
static void check_order(struct ctx *c, yaml_node_t *map, const char *sec, const char *lo_key,
			double lo, const char *hi_key, double hi, bool zero_is_unset,
			const char *what)
{
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s.%s", sec, lo_key);
	snprintf(b, sizeof(b), "%s.%s", sec, hi_key);
	if (any_failed(c, a, b) || (zero_is_unset && (lo <= 0 || hi <= 0)) || lo <= hi)
		return;
	msg_at(c, DIAG_ERROR, where(c, map, given(c, map, lo_key) ? lo_key : hi_key),
	       given(c, map, lo_key) ? a : b, "min-above-max",
	       "%s: %s (%g) is above %s (%g); allowed %s <= %s", what, lo_key, lo, hi_key, hi, lo_key,
	       hi_key);
}

static void check_sla(struct ctx *c)
{
	const struct policy *p = c->p;
	char a[64], b[64];
	for (int m = 0; m < SLA_N_METRICS; m++) {
		size_t i95 = SLA_INDEX(m, SLA_P95), i99 = SLA_INDEX(m, SLA_P99);
		const struct sla_row *t95 = &sla_rows[i95], *t99 = &sla_rows[i99];
		double v95 = p->sla.latency_ms[i95], v99 = p->sla.latency_ms[i99];
		snprintf(a, sizeof(a), "sla.%s", t95->key);
		snprintf(b, sizeof(b), "sla.%s", t99->key);
		if (v95 > 0 && v99 > 0 && v95 > v99 && !any_failed(c, a, b))
			msg_at(c, DIAG_ERROR, where(c, c->sla, t95->key), a, "p95-above-p99",
			       "%s p95 target %g ms is above its p99 target %g ms; allowed <= %g ms "
			       "(95 %% of requests cannot be slower than 99 %%)",
			       t95->metric_name, v95, v99, v99);
	}
	/* End-to-end latency includes the time to the first token. */
	double e2e99 = p->sla.latency_ms[SLA_INDEX(SLA_E2E, SLA_P99)];
	double ttft99 = p->sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)];
	if (e2e99 > 0 && ttft99 > 0 && e2e99 < ttft99 &&
	    !any_failed(c, "sla.e2e_p99_ms", "sla.ttft_p99_ms"))
		msg_at(c, DIAG_ERROR, where(c, c->sla, "e2e_p99_ms"), "sla.e2e_p99_ms", "e2e-below-ttft",
		       "end-to-end p99 target %g ms is below the TTFT p99 target %g ms; allowed >= %g ms",
		       e2e99, ttft99, ttft99);
	if (p->sla.window_s * 1000.0 < p->control.period_ms &&
	    !any_failed(c, "sla.window_s", "control.period_ms"))
		msg_at(c, DIAG_ERROR, where(c, c->sla, "window_s"), "sla.window_s", "window-below-period",
		       "SLA window %g s is shorter than the control period %u ms; allowed >= %g s",
		       p->sla.window_s, p->control.period_ms, p->control.period_ms / 1000.0);
	if (given(c, c->tele, "stale_ms") && p->telemetry.stale_ms < p->control.period_ms &&
	    !any_failed(c, "telemetry.stale_ms", "control.period_ms"))
		msg_at(c, DIAG_ERROR, where(c, c->tele, "stale_ms"), "telemetry.stale_ms",
		       "stale-below-period",
		       "%u ms is shorter than the control period (%u ms): every reading would be stale; "
		       "allowed >= %u ms",
		       p->telemetry.stale_ms, p->control.period_ms, p->control.period_ms);
}

/* value (at sec.key) must lie in the envelope's [lo, hi] when both are set. */
static void check_in_envelope(struct ctx *c, yaml_node_t *map, const char *sec, const char *key,
			      double v, double lo, double hi, const char *env_lo, const char *env_hi,
			      const char *unit)
{
	char kp[128];
	snprintf(kp, sizeof(kp), "%s.%s", sec, key);
	if (v <= 0 || failed(c, kp) || failed(c, env_lo) || failed(c, env_hi))
		return;
	if ((lo > 0 && v < lo) || (hi > 0 && v > hi)) {
		char allowed[96];
		if (lo > 0 && hi > 0)
			snprintf(allowed, sizeof(allowed), "%g..%g %s", lo, hi, unit);
		else if (lo > 0)
			snprintf(allowed, sizeof(allowed), ">= %g %s (%s)", lo, unit, env_lo);
		else
			snprintf(allowed, sizeof(allowed), "<= %g %s (%s)", hi, unit, env_hi);
		msg_at(c, DIAG_ERROR, where(c, map, key), kp, "outside-envelope",
		       "%g %s is outside the envelope the policy was validated in; allowed %s", v, unit,
		       allowed);
	}
}

static void check_limits(struct ctx *c)
{
	const struct policy *p = c->p;
	const struct policy_envelope *e = &p->envelope;

	check_order(c, c->freq, "frequency", "min_mhz", p->frequency.min_mhz, "max_mhz",
		    p->frequency.max_mhz, true, "clock range");
	check_order(c, c->env, "envelope", "inlet_min_c", e->inlet_min_c, "inlet_max_c",
		    e->inlet_max_c, false, "inlet range");
	check_order(c, c->env, "envelope", "power_limit_min_w", e->power_limit_min_w,
		    "power_limit_max_w", e->power_limit_max_w, true, "power-limit range");
	check_order(c, c->env, "envelope", "clk_min_mhz", e->clk_min_mhz, "clk_max_mhz",
		    e->clk_max_mhz, true, "clock range");
	check_order(c, c->rb, "rollback", "hold_s", p->rollback.hold_s, "max_hold_s",
		    p->rollback.max_hold_s, false, "rollback hold");
	if (p->rollback.sla_violated_windows > p->rollback.sla_of_windows &&
	    !any_failed(c, "rollback.triggers.sla_violated_windows", "rollback.triggers.sla_of_windows"))
		msg_at(c, DIAG_ERROR, where(c, c->trig, "sla_violated_windows"),
		       "rollback.triggers.sla_violated_windows", "n-above-m",
		       "%u violated windows out of the last %u can never happen; allowed 0..%u "
		       "(N of M: sla_violated_windows <= sla_of_windows)",
		       p->rollback.sla_violated_windows, p->rollback.sla_of_windows,
		       p->rollback.sla_of_windows);

	/* The soft ceiling is the governor's target below the firmware's clamp. */
	if (p->thermal.ceiling_c >= e->slowdown_c &&
	    !any_failed(c, "thermal.ceiling_c", "envelope.slowdown_c"))
		msg_at(c, DIAG_ERROR, where(c, c->thermal, "ceiling_c"), "thermal.ceiling_c",
		       "ceiling-above-slowdown",
		       "soft ceiling %g C is not below the hardware slowdown (envelope.slowdown_c = %g C); "
		       "allowed < %g C",
		       p->thermal.ceiling_c, e->slowdown_c, e->slowdown_c);

	check_in_envelope(c, c->freq, "frequency", "min_mhz", p->frequency.min_mhz, e->clk_min_mhz,
			  e->clk_max_mhz, "envelope.clk_min_mhz", "envelope.clk_max_mhz", "MHz");
	check_in_envelope(c, c->freq, "frequency", "max_mhz", p->frequency.max_mhz, e->clk_min_mhz,
			  e->clk_max_mhz, "envelope.clk_min_mhz", "envelope.clk_max_mhz", "MHz");
	check_in_envelope(c, c->power, "power", "cap_w", p->power.cap_w, e->power_limit_min_w,
			  e->power_limit_max_w, "envelope.power_limit_min_w",
			  "envelope.power_limit_max_w", "W");
	check_in_envelope(c, c->safe, "safe_point", "power_cap_w", p->safe_point.power_cap_w,
			  e->power_limit_min_w, e->power_limit_max_w, "envelope.power_limit_min_w",
			  "envelope.power_limit_max_w", "W");
	check_in_envelope(c, c->safe, "safe_point", "clk_max_mhz", p->safe_point.clk_max_mhz,
			  e->clk_min_mhz, e->clk_max_mhz, "envelope.clk_min_mhz",
			  "envelope.clk_max_mhz", "MHz");

	/* The safe point must not ask for more than the policy allows at all. */
	if (p->safe_point.power_cap_w > 0 && p->power.cap_w > 0 &&
	    p->safe_point.power_cap_w > p->power.cap_w &&
	    !any_failed(c, "safe_point.power_cap_w", "power.cap_w"))
		msg_at(c, DIAG_ERROR, where(c, c->safe, "power_cap_w"), "safe_point.power_cap_w",
		       "safe-above-limit", "%g W is above power.cap_w (%g W); allowed <= %g W",
		       p->safe_point.power_cap_w, p->power.cap_w, p->power.cap_w);
	if (p->safe_point.clk_max_mhz > 0 && p->frequency.max_mhz > 0 &&
	    p->safe_point.clk_max_mhz > p->frequency.max_mhz &&
	    !any_failed(c, "safe_point.clk_max_mhz", "frequency.max_mhz"))
		msg_at(c, DIAG_ERROR, where(c, c->safe, "clk_max_mhz"), "safe_point.clk_max_mhz",
		       "safe-above-limit", "%g MHz is above frequency.max_mhz (%g MHz); allowed <= %g MHz",
		       p->safe_point.clk_max_mhz, p->frequency.max_mhz, p->frequency.max_mhz);
}

/* Where a slice's INT8 setting was written: its precision entry (key or
 * value) or, for the policy-wide value, the precision section. */
static yaml_node_t *slice_where(struct ctx *c, size_t i, const char *key)
{
	yaml_node_t *k = c->slice_prec[i];
	if (!k)
		return where(c, c->prec, key);
	yaml_node_t *sl = ycfg_get(c->y, c->prec, "slices");
	yaml_node_t *v = ycfg_get(c->y, sl, c->p->slices[i].name);
	if (v && v->type == YAML_MAPPING_NODE && ycfg_get(c->y, v, key))
		return ycfg_get(c->y, v, key);
	return v && v->type == YAML_SCALAR_NODE ? v : k;
}

static void check_precision(struct ctx *c)
{
	const struct policy *p = c->p;
	/* The int8_* shares are the 8-bit share: INT8's, or FP8's on a ladder. */
	bool int8_mode = p->precision.modes &
			 (POLICY_PREC_BIT(POLICY_PREC_INT8) | POLICY_PREC_BIT(POLICY_PREC_FP8));
	char kp[256];

	if (any_failed(c, "precision.modes", "precision.fallback"))
		return;
	if (!(p->precision.modes & POLICY_PREC_BIT(p->precision.fallback)))
		msg_at(c, DIAG_ERROR, where(c, c->prec, "fallback"), "precision.fallback",
		       "fallback-not-allowed",
		       "fallback '%s' is not in precision.modes; allowed: one of precision.modes",
		       policy_prec_name(p->precision.fallback));
	else if (p->precision.fallback == POLICY_PREC_INT8)
		msg_at(c, DIAG_WARNING, where(c, c->prec, "fallback"), "precision.fallback",
		       "fallback-int8",
		       "the fallback serves INT8 when the quality gate denies it; bf16 is the usual "
		       "fallback");

	/* Policy-wide INT8 settings. */
	if (!int8_mode) {
		static const char *const keys[] = { "int8_fraction", "int8_min_fraction", NULL };
		const double vals[] = { p->precision.int8_fraction, p->precision.int8_min_fraction };
		for (size_t i = 0; keys[i]; i++)
			if (vals[i] > 0)
				msg_at(c, DIAG_ERROR, where(c, c->prec, keys[i]),
				       ycfg_join(kp, sizeof(kp), "precision", keys[i]), "int8-not-allowed",
				       "%g asks for INT8 but precision.modes does not list int8; allowed: 0, "
				       "or add int8 to precision.modes",
				       vals[i]);
		if (p->safe_point.int8_fraction > 0 && !failed(c, "safe_point.int8_fraction"))
			msg_at(c, DIAG_ERROR, where(c, c->safe, "int8_fraction"),
			       "safe_point.int8_fraction", "int8-not-allowed",
			       "%g asks for INT8 but precision.modes does not list int8; allowed: 0",
			       p->safe_point.int8_fraction);
	} else {
		check_order(c, c->prec, "precision", "int8_min_fraction", p->precision.int8_min_fraction,
			    "int8_max_fraction", p->precision.int8_max_fraction, false, "INT8 share bounds");
		if (p->precision.int8_min_fraction <= p->precision.int8_max_fraction &&
		    (p->precision.int8_fraction < p->precision.int8_min_fraction ||
		     p->precision.int8_fraction > p->precision.int8_max_fraction) &&
		    !failed(c, "precision.int8_fraction"))
			msg_at(c, DIAG_ERROR, where(c, c->prec, "int8_fraction"),
			       "precision.int8_fraction", "outside-bounds",
			       "%g is outside the INT8 share bounds; allowed %g..%g "
			       "(int8_min_fraction..int8_max_fraction)",
			       p->precision.int8_fraction, p->precision.int8_min_fraction,
			       p->precision.int8_max_fraction);
		if (p->safe_point.int8_fraction > p->precision.int8_max_fraction &&
		    !failed(c, "safe_point.int8_fraction"))
			msg_at(c, DIAG_ERROR, where(c, c->safe, "int8_fraction"),
			       "safe_point.int8_fraction", "outside-bounds",
			       "%g is above precision.int8_max_fraction; allowed 0..%g",
			       p->safe_point.int8_fraction, p->precision.int8_max_fraction);
		else if (p->safe_point.int8_fraction > 0)
			msg_at(c, DIAG_WARNING, where(c, c->safe, "int8_fraction"),
			       "safe_point.int8_fraction", "safe-int8",
			       "the safe point serves INT8 (%g) while telemetry is faulty, when quality "
			       "cannot be watched; 0 is the usual safe point",
			       p->safe_point.int8_fraction);
		if (p->precision.int8_min_fraction > 0)
			msg_at(c, DIAG_WARNING, where(c, c->prec, "int8_min_fraction"),
			       "precision.int8_min_fraction", "int8-forced",
			       "a minimum INT8 share of %g overrides the quality gate on every slice",
			       p->precision.int8_min_fraction);
	}

	/* Per slice, resolved. */
	bool default_drop_written = given(c, c->qual, "default_max_drop");
	for (size_t i = 0; i < p->n_slices; i++) {
		const struct policy_slice *s = &p->slices[i];
		struct policy_slice_rule r;
		char sp[160];
		snprintf(sp, sizeof(sp), "precision.slices.%s", s->name);
		if (failed(c, sp))
			continue;
		if (!int8_mode) {
			if (s->int8_fraction > 0 || s->int8_min_fraction > 0)
				msg_at(c, DIAG_ERROR, slice_where(c, i, s->int8_fraction > 0 ?
								       "int8_fraction" :
								       "int8_min_fraction"),
				       sp, "int8-not-allowed",
				       "slice '%s' asks for INT8 but precision.modes does not list int8; "
				       "allowed: 0, or add int8 to precision.modes",
				       s->name);
			continue;
		}
		policy_slice_rule(p, s->name, &r);
		/* Bounds as resolved (a slice bound may meet a policy-wide one). */
		if (r.int8_min_fraction > r.int8_max_fraction) {
			msg_at(c, DIAG_ERROR, slice_where(c, i, "int8_min_fraction"), sp, "min-above-max",
			       "slice '%s': INT8 share minimum %g is above its maximum %g; allowed "
			       "int8_min_fraction <= int8_max_fraction",
			       s->name, r.int8_min_fraction, r.int8_max_fraction);
			continue;
		}
		if (c->slice_prec[i] && (r.int8_fraction < r.int8_min_fraction ||
					 r.int8_fraction > r.int8_max_fraction))
			msg_at(c, DIAG_ERROR, slice_where(c, i, "int8_fraction"), sp, "outside-bounds",
			       "slice '%s': INT8 share %g is outside its bounds; allowed %g..%g", s->name,
			       r.int8_fraction, r.int8_min_fraction, r.int8_max_fraction);
		/* Serving INT8 on a slice that tolerates no drop. */
		if ((r.int8_fraction > 0 || r.int8_min_fraction > 0) && r.max_drop == 0)
			msg_at(c, DIAG_ERROR, slice_where(c, i, r.int8_min_fraction > 0 ?
								       "int8_min_fraction" :
								       "int8_fraction"),
			       sp, "int8-zero-drop",
			       "slice '%s' is given INT8 (share %g, minimum %g) but its quality max_drop is "
			       "0; allowed: INT8 share 0, or a max_drop above 0",
			       s->name, r.int8_fraction, r.int8_min_fraction);
		else if (s->int8_min_fraction > 0)
			msg_at(c, DIAG_WARNING, slice_where(c, i, "int8_min_fraction"), sp, "int8-forced",
			       "slice '%s': a minimum INT8 share of %g overrides the quality gate",
			       s->name, s->int8_min_fraction);
		if (c->slice_prec[i] && r.low_allowed && s->max_drop < 0 && !default_drop_written)
			msg_at(c, DIAG_WARNING, c->slice_prec[i], sp, "int8-no-threshold",
			       "INT8 allowed on slice '%s' with no quality threshold written "
			       "(quality.slices.%s.max_drop or quality.default_max_drop); the built-in "
			       "%g applies",
			       s->name, s->name, r.max_drop);
		if (r.low_allowed && r.shadow_rate == 0)
			msg_at(c, DIAG_WARNING, c->slice_qual[i] ? c->slice_qual[i] : c->slice_prec[i],
			       sp, "no-shadow",
			       "INT8 allowed on slice '%s' with shadow_rate 0: its quality bound never "
			       "updates, so INT8 cannot be granted or revoked on evidence",
			       s->name);
	}
	/* The policy-wide INT8 default with nothing written about quality. */
	if (int8_mode && p->precision.int8_max_fraction > 0) {
		if ((p->precision.int8_fraction > 0 || p->precision.int8_min_fraction > 0) &&
		    p->quality.default_max_drop == 0 && !failed(c, "quality.default_max_drop"))
			msg_at(c, DIAG_ERROR, where(c, c->prec, "int8_fraction"), "precision.int8_fraction",
			       "int8-zero-drop",
			       "INT8 share %g for slices not named, but quality.default_max_drop is 0; "
			       "allowed: 0, or a default_max_drop above 0",
			       p->precision.int8_fraction);
		if (!default_drop_written)
			msg_at(c, DIAG_WARNING, c->qual ? c->qual : where(c, c->prec, "modes"),
			       "quality.default_max_drop", "int8-no-threshold",
			       "INT8 is allowed (precision.modes) but no quality threshold is written for "
			       "slices not named; the built-in %g applies",
			       p->quality.default_max_drop);
		if (p->quality.shadow_rate == 0 && !failed(c, "quality.shadow_rate"))
			msg_at(c, DIAG_WARNING, where(c, c->qual, "shadow_rate"), "quality.shadow_rate",
			       "no-shadow",
			       "INT8 allowed with shadow_rate 0: quality bounds never update, so INT8 "
			       "cannot be granted or revoked on evidence");
	}
}

static void check_warnings(struct ctx *c)
{
	const struct policy *p = c->p;

	if (!c->meta || !p->metadata.n_owners)
		msg_at(c, DIAG_WARNING, c->meta ? c->meta : c->root, "metadata.owners", "no-owner",
		       "no owner: add metadata.owners so reviewers know whom to ask");
	if (p->thermal.hysteresis_c == 0 && !failed(c, "thermal.hysteresis_c"))
		msg_at(c, DIAG_WARNING, where(c, c->thermal, "hysteresis_c"), "thermal.hysteresis_c",
		       "no-hysteresis",
		       "no hysteresis: controllers that switch on the ceiling will chatter around it");
	double margin = p->envelope.slowdown_c - p->thermal.ceiling_c;
	if (margin > 0 && margin < CEILING_MARGIN_C)
		msg_at(c, DIAG_WARNING, where(c, c->thermal, "ceiling_c"), "thermal.ceiling_c",
		       "ceiling-near-slowdown",
		       "soft ceiling %g C is within %g C of the hardware slowdown (%g C): a load step "
		       "can reach the clamp before the governor reacts",
		       p->thermal.ceiling_c, CEILING_MARGIN_C, p->envelope.slowdown_c);
	if (p->control.period_ms < SHORT_PERIOD_MS && !failed(c, "control.period_ms"))
		msg_at(c, DIAG_WARNING, where(c, c->control, "period_ms"), "control.period_ms",
		       "short-period",
		       "period %u ms is under %d ms: readings barely change between periods and every "
		       "period may write to the device",
		       p->control.period_ms, SHORT_PERIOD_MS);
	if (p->quality.confidence < 0.9 && !failed(c, "quality.confidence"))
		msg_at(c, DIAG_WARNING, where(c, c->qual, "confidence"), "quality.confidence",
		       "low-confidence",
		       "confidence %g: INT8 may serve a slice on weak evidence (0.95 is usual)",
		       p->quality.confidence);
	const struct policy_rollback *rb = &p->rollback;
	if (!rb->sla_violated_windows && !rb->quality_breach && !rb->thermal_clamp_events &&
	    !rb->telemetry_faults)
		msg_at(c, DIAG_WARNING, c->trig ? c->trig : where(c, c->rb, NULL), "rollback.triggers",
		       "rollback-off", "every rollback trigger is off: a bad change is never undone");
	else if (rb->sla_violated_windows && rb->canary_s > 0 &&
		 rb->canary_s < rb->sla_violated_windows * p->sla.window_s)
		msg_at(c, DIAG_WARNING, where(c, c->rb, "canary_s"), "rollback.canary_s", "canary-short",
		       "canary %g s cannot see %u violated SLA windows of %g s; the SLA trigger cannot "
		       "fire inside it (allowed >= %g s to be useful)",
		       rb->canary_s, rb->sla_violated_windows, p->sla.window_s,
		       rb->sla_violated_windows * p->sla.window_s);
	bool any_target = p->sla.min_tokens_per_s > 0;
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		any_target |= p->sla.latency_ms[i] > 0;
	if (p->objective.kind == POLICY_OBJ_MIN_ENERGY && !any_target)
		msg_at(c, DIAG_WARNING, where(c, c->objective, "kind"), "objective.kind",
		       "objective-unbounded",
		       "min_energy with no SLA target: the least energy is to serve slowly; set a "
		       "latency target or sla.min_tokens_per_s");
	/* Provenance outside what the policy enforces is probably a stale envelope. */
	const char *drv = p->metadata.validated_with.driver;
	bool drv_ok = !p->envelope.n_driver || !drv[0];
	for (size_t i = 0; !drv_ok && i < p->envelope.n_driver; i++)
		drv_ok = fnmatch(p->envelope.driver_versions[i], drv, 0) == 0;
	if (!drv_ok)
		msg_at(c, DIAG_WARNING, where(c, c->env, "driver_versions"), "envelope.driver_versions",
		       "validated-outside-envelope",
		       "metadata.validated_with.driver '%s' matches no envelope.driver_versions pattern",
		       drv);
}

/* Findings in file order (cross-key checks run after the reading); ties keep
 * the order they were found in. */
static int by_position(const void *a, const void *b)
{
	const struct diag *x = a, *y = b;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return 0;
}

static void sort_diags(struct diag_list *l, size_t first)
{
	/* Insertion sort: stable, and a file has few findings. */
	for (size_t i = first + 1; i < l->n; i++) {
		struct diag d = l->v[i];
		size_t j = i;
		while (j > first && by_position(&l->v[j - 1], &d) > 0) {
			l->v[j] = l->v[j - 1];
			j--;
		}
		l->v[j] = d;
	}
}

static void parse(struct ycfg *y, struct policy *p)
{
	struct ctx c = { .y = y, .p = p, .first = y->diags->n };

	c.root = ycfg_root(y);
	if (!c.root) {
		diag_add(y->diags, DIAG_ERROR, y->file, 1, 1, "", "empty",
			 "empty policy; expected a mapping with name and control");
		return;
	}
	if (!ycfg_is_map(y, c.root, ""))
		return;
	check_keys(&c, c.root, "", "");
	if (text(&c, c.root, "", "name", true, p->name, sizeof(p->name)) && !name_ok(p->name))
		msg_at(&c, DIAG_ERROR, ycfg_get(y, c.root, "name"), "name", "name",
		       "'%s' is not allowed (it names output directories); use letters, digits, '.', "
		       "'_' and '-', starting with a letter or digit",
		       p->name);
	read_scalars(&c, c.root, "", "", p); /* description; name above */
	read_metadata(&c);
	read_objective(&c);
	read_control(&c);
	read_sla(&c);
	read_limits(&c);
	read_precision_quality(&c);
	read_envelope(&c);
	read_rollback(&c);

	check_sla(&c);
	check_limits(&c);
	check_precision(&c);
	check_warnings(&c);
	sort_diags(y->diags, c.first);
}

int policy_parse_string(const char *name, const char *text, size_t len, struct policy **out,
			struct diag_list *diags)
{
	struct ycfg y = { 0 };
	struct policy *p;
	size_t before = diag_count(diags, DIAG_ERROR);
	int rc;

	*out = NULL;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	policy_defaults(p);
	snprintf(p->path, sizeof(p->path), "%s", name);
	p->hash = fnv1a64(text, len);
	snprintf(p->hash_hex, sizeof(p->hash_hex), "fnv1a64:%016llx", (unsigned long long)p->hash);

	rc = ycfg_load_string(&y, name, text, len, diags);
	if (rc) {
		ycfg_fini(&y); /* a failed load still owns its file name */
		free(p);
		return rc;
	}
	parse(&y, p);
	ycfg_fini(&y);
	*out = p;
	return diag_count(diags, DIAG_ERROR) > before ? -EINVAL : 0;
}

int policy_parse(const char *path, struct policy **out, struct diag_list *diags)
{
	char *buf;
	size_t len;
	int rc;

	*out = NULL;
	/* Read once: the same bytes are hashed and parsed. */
	rc = ycfg_read_file(path, &buf, &len, diags);
	if (rc)
		return rc;
	rc = policy_parse_string(path, buf, len, out, diags);
	free(buf);
	return rc;
}

int policy_bind_controller(struct policy *p, bool known, const char *valid_names,
			   const struct ctl_param *params, struct diag_list *diags, size_t first)
{
	size_t before = diag_count(diags, DIAG_ERROR);
	char kp[256], msg[900];

	if (!p->control.controller[0])
		goto out; /* missing: the loader said so */
	if (!known) {
		diag_add(diags, DIAG_ERROR, p->path, p->control.controller_line, p->control.controller_col,
			 "control.controller", "unknown-controller", "unknown controller '%s'; valid: %s",
			 p->control.controller, valid_names);
		goto out;
	}
	const char *allowed[POLICY_MAX_PARAMS + 1];
	size_t na = 0;
	for (const struct ctl_param *cp = params; cp && cp->name && na < POLICY_MAX_PARAMS; cp++)
		allowed[na++] = cp->name;
	allowed[na] = NULL;
	if (!na && p->control.n_params) {
		diag_add(diags, DIAG_ERROR, p->path, p->control.params_line, p->control.params_col,
			 "control.params", "no-params",
			 "controller '%s' takes no parameters; remove control.params",
			 p->control.controller);
		goto out;
	}
	/* The controller's own parameter table gives the allowed keys and ranges. */
	for (size_t i = 0; i < p->control.n_params; i++) {
		struct policy_param *pp = &p->control.params[i];
		const struct ctl_param *cp = NULL;
		/* the whole table: the allowed list above is only the message's */
		for (const struct ctl_param *q = params; q->name && !cp; q++)
			if (!strcmp(q->name, pp->name))
				cp = q;
		ycfg_join(kp, sizeof(kp), "control.params", pp->name);
		if (!cp) {
			ycfg_format_unknown_key(msg, sizeof(msg), pp->name, allowed);
			diag_add(diags, DIAG_ERROR, p->path, pp->key_line, pp->key_col, kp, "unknown-key",
				 "%s", msg);
			continue;
		}
		if (!pp->is_number)
			continue;
		if (pp->value < cp->min || pp->value > cp->max) {
			ycfg_format_range(msg, sizeof(msg), pp->text, cp->min, cp->max,
					  ycfg_key_unit(pp->name));
			diag_add(diags, DIAG_ERROR, p->path, pp->line, pp->col, kp, "range", "%s", msg);
		}
	}
out:
	sort_diags(diags, first);
	return diag_count(diags, DIAG_ERROR) > before ? -EINVAL : 0;
}

void policy_free(struct policy *p)
{
	free(p);
}
