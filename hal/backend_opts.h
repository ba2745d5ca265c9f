/* String key/value options of struct hal_dev_cfg, read strictly: unknown and
 * duplicate keys are errors that list what is allowed, numbers must parse in
 * full and lie in range. Diags name the device (cfg->name) as their source and
 * the key as their path, since hal/ never sees the YAML the options came from.
 * Every backend reads its options through it, so they all report the same
 * way (path "options.<key>"). */
#ifndef GOVD_HAL_BACKEND_OPTS_H
#define GOVD_HAL_BACKEND_OPTS_H
#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"
#include "hal/hal.h"

struct bopts {
	const struct hal_dev_cfg *cfg;
	struct diag_list *diags;
	const char *src;    /* diag source: device name or backend name */
	const char *prefix; /* diag path prefix, "options" */
	int errors;
};

void bopts_init(struct bopts *o, const struct hal_dev_cfg *cfg, struct diag_list *diags,
		const char *backend);
/* allowed[] NULL-terminated. Returns the number of problems (also added to errors). */
int bopts_check_keys(struct bopts *o, const char *const *allowed);
/* The value, or def when absent. */
const char *bopts_str(struct bopts *o, const char *key, const char *def);
bool bopts_has(const struct bopts *o, const char *key);
/* Decimal or 0x hex. Absent: *out = def, 0. Bad: diag, -EINVAL. */
int bopts_u64(struct bopts *o, const char *key, uint64_t min, uint64_t max, uint64_t def,
	      uint64_t *out);
int bopts_u32(struct bopts *o, const char *key, uint32_t min, uint32_t max, uint32_t def,
	      uint32_t *out);
/* true/false/yes/no/1/0 (any case). */
int bopts_bool(struct bopts *o, const char *key, bool def, bool *out);
/* names[] NULL-terminated; *out is the index, def when absent. */
int bopts_enum(struct bopts *o, const char *key, const char *const *names, int def, int *out);
void bopts_error(struct bopts *o, const char *key, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void bopts_warning(struct bopts *o, const char *key, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
