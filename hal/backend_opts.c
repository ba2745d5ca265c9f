/* Strict reading of backend options; see backend_opts.h. */
#include "hal/backend_opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void bopts_init(struct bopts *o, const struct hal_dev_cfg *cfg, struct diag_list *diags,
		const char *backend)
{
	o->cfg = cfg;
	o->diags = diags;
	o->src = (cfg && cfg->name && cfg->name[0]) ? cfg->name : backend;
	o->prefix = "options";
	o->errors = 0;
}

static void vadd(struct bopts *o, enum diag_sev sev, const char *key, const char *code,
		 const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void vadd(struct bopts *o, enum diag_sev sev, const char *key, const char *code,
		 const char *fmt, va_list ap)
{
	char msg[600], path[160];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (key && key[0])
		snprintf(path, sizeof(path), "%s.%s", o->prefix, key);
	else
		snprintf(path, sizeof(path), "%s", o->prefix);
	if (sev == DIAG_ERROR)
		o->errors++;
	if (o->diags)
		diag_add(o->diags, sev, o->src, 0, 0, path, code, "%s", msg);
}

void bopts_error(struct bopts *o, const char *key, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(o, DIAG_ERROR, key, code, fmt, ap);
	va_end(ap);
}

void bopts_warning(struct bopts *o, const char *key, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vadd(o, DIAG_WARNING, key, code, fmt, ap);
	va_end(ap);
}

static const char *lookup(const struct bopts *o, const char *key)
{
	if (!o->cfg)
		return NULL;
	for (size_t i = 0; i < o->cfg->n_opts; i++)
		if (o->cfg->keys[i] && strcmp(o->cfg->keys[i], key) == 0)
			return o->cfg->values[i] ? o->cfg->values[i] : "";
	return NULL;
}

bool bopts_has(const struct bopts *o, const char *key)
{
	return lookup(o, key) != NULL;
}

static void join_names(const char *const *names, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; names[i] && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

int bopts_check_keys(struct bopts *o, const char *const *allowed)
{
	int problems = 0;
	if (!o->cfg)
		return 0;
	for (size_t i = 0; i < o->cfg->n_opts; i++) {
		const char *k = o->cfg->keys[i];
		if (!k) {
			bopts_error(o, "", "unknown-key", "option %zu has no key", i);
			problems++;
			continue;
		}
		bool ok = false;
		for (size_t j = 0; allowed[j]; j++)
			if (strcmp(k, allowed[j]) == 0)
				ok = true;
		if (!ok) {
			char names[512];
			join_names(allowed, names, sizeof(names));
			bopts_error(o, k, "unknown-key", "unknown option '%s'; allowed: %s", k, names);
			problems++;
		}
		for (size_t j = 0; j < i; j++)
			if (o->cfg->keys[j] && strcmp(o->cfg->keys[j], k) == 0) {
				bopts_error(o, k, "duplicate", "option '%s' given twice", k);
				problems++;
				break;
			}
	}
	return problems;
}

const char *bopts_str(struct bopts *o, const char *key, const char *def)
{
	const char *v = lookup(o, key);
	return v ? v : def;
}

int bopts_u64(struct bopts *o, const char *key, uint64_t min, uint64_t max, uint64_t def,
	      uint64_t *out)
{
	const char *s = lookup(o, key);
	if (!s) {
		*out = def;
		return 0;
	}
	char *end;
	errno = 0;
	int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
	unsigned long long v = strtoull(s, &end, base);
	if (s[0] == '-' || s[0] == '\0' || end == s || *end != '\0') {
		bopts_error(o, key, "type", "expected an unsigned integer, got '%s'", s);
		return -EINVAL;
	}
	if (errno == ERANGE || v < min || v > max) {
		bopts_error(o, key, "range", "%s is out of range; allowed %llu..%llu", s,
			    (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int bopts_u32(struct bopts *o, const char *key, uint32_t min, uint32_t max, uint32_t def,
	      uint32_t *out)
{
	uint64_t v;
	int rc = bopts_u64(o, key, min, max, def, &v);
	if (rc == 0)
		*out = (uint32_t)v;
	return rc;
}

int bopts_bool(struct bopts *o, const char *key, bool def, bool *out)
{
	const char *s = lookup(o, key);
	if (!s) {
		*out = def;
		return 0;
	}
	static const char *const t[] = { "true", "yes", "1", "on", NULL };
	static const char *const f[] = { "false", "no", "0", "off", NULL };
	for (size_t i = 0; t[i]; i++)
		if (strcasecmp(s, t[i]) == 0) {
			*out = true;
			return 0;
		}
	for (size_t i = 0; f[i]; i++)
		if (strcasecmp(s, f[i]) == 0) {
			*out = false;
			return 0;
		}
	bopts_error(o, key, "type", "expected true or false, got '%s'", s);
	return -EINVAL;
}

int bopts_enum(struct bopts *o, const char *key, const char *const *names, int def, int *out)
{
	const char *s = lookup(o, key);
	if (!s) {
		*out = def;
		return 0;
	}
	for (int i = 0; names[i]; i++)
		if (strcasecmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	char list[256];
	join_names(names, list, sizeof(list));
	bopts_error(o, key, "enum", "'%s' is not one of: %s", s, list);
	return -EINVAL;
}
