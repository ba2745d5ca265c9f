/* Strict reading of YAML documents (libyaml document API) for every file kind
 * users edit (scenarios, policies, configs). Every problem becomes a diag with
 * file:line:col, the key path and what is allowed; readers keep going so all
 * errors of a file are reported in one run.
 *
 * Conventions: `path` is the key path of the mapping being read ("" for the
 * root, "thermal", "slices[2]"); the reported path is path + "." + key.
 * Getters return 0 when the value was read or absent-and-optional (then *out is
 * left untouched, so callers preload defaults), -EINVAL after adding a diag.
 * Numbers and booleans must be plain (unquoted) scalars; numbers are parsed
 * with a full-string strtod/strtoll check and must be finite; booleans are
 * true/false/yes/no (any case). Range messages carry the unit implied by the
 * key suffix (_c, _s, _ms, _w, _mhz, _rps ...). Aliases share nodes (no
 * copies), so anchors cannot blow up memory; readers descend only as deep as
 * their schema, so a self-referencing alias cannot loop. */
#ifndef GOVD_COMMON_YCFG_H
#define GOVD_COMMON_YCFG_H
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "common/diag.h"

/* Structure bounds, checked on the event stream before the document is built
 * (an error naming the limit at the file:line:col where it is passed). */
#define YCFG_MAX_DEPTH 64
#define YCFG_MAX_ENTRIES 100000 /* items of one list, keys of one mapping */

struct ycfg {
	yaml_document_t doc;
	bool loaded;
	char *file;              /* as given, used in diags */
	struct diag_list *diags; /* not owned */
};

/* Parse a whole file. A missing/unreadable file yields a diag naming the path
 * and strerror; a syntax error yields libyaml's problem with its line:col.
 * Call ycfg_fini afterwards whatever the result. */
int ycfg_load_file(struct ycfg *y, const char *path, struct diag_list *diags);
/* The whole file into *buf (malloc'd, NUL-terminated, *len without the NUL;
 * caller frees), for callers that need the bytes too (hashing). Read with
 * fsafe_read_all: a regular file only (a FIFO, directory or device is an
 * error, never a hang), at most 1 MiB, lines at most 64 KiB; same diags as
 * ycfg_load_file; on error *buf is NULL. */
int ycfg_read_file(const char *path, char **buf, size_t *len, struct diag_list *diags);
int ycfg_load_string(struct ycfg *y, const char *name, const char *text, size_t len,
		     struct diag_list *diags);
void ycfg_fini(struct ycfg *y);

yaml_node_t *ycfg_root(struct ycfg *y); /* NULL for an empty document */
/* Requires a mapping node; adds "expected a mapping" otherwise. A NULL node
 * (key absent) returns false without a diag: the caller knows if absent is ok. */
bool ycfg_is_map(struct ycfg *y, yaml_node_t *n, const char *path);
bool ycfg_is_seq(struct ycfg *y, yaml_node_t *n, const char *path);
size_t ycfg_seq_len(yaml_node_t *seq);
yaml_node_t *ycfg_seq_at(struct ycfg *y, yaml_node_t *seq, size_t i);

/* Every key of map must be one of allowed[] (NULL-terminated): an unknown key
 * is an error that lists the allowed ones (and suggests the closest); a
 * duplicate key is an error. Returns number of problems found. */
int ycfg_check_keys(struct ycfg *y, yaml_node_t *map, const char *path,
		    const char *const *allowed);
yaml_node_t *ycfg_get(struct ycfg *y, yaml_node_t *map, const char *key);

int ycfg_double(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
		bool required, double min, double max, double *out);
int ycfg_int(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
	     bool required, long long min, long long max, long long *out);
int ycfg_bool(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
	      bool required, bool *out);
int ycfg_string(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
		bool required, char *buf, size_t len);
/* names[] NULL-terminated; *out is the index. Error lists the names. */
int ycfg_enum(struct ycfg *y, yaml_node_t *map, const char *path, const char *key,
	      bool required, const char *const *names, int *out);
/* Scalar node conversions, for sequences of scalars. */
int ycfg_node_double(struct ycfg *y, yaml_node_t *n, const char *path, double min, double max,
		     double *out);

void ycfg_error(struct ycfg *y, const yaml_node_t *n, const char *path, const char *code,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void ycfg_warning(struct ycfg *y, const yaml_node_t *n, const char *path, const char *code,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Join "a" + "b" -> "a.b", "" + "b" -> "b"; index form "a[3]". Static-free: writes buf. */
const char *ycfg_join(char *buf, size_t len, const char *path, const char *key);
const char *ycfg_index(char *buf, size_t len, const char *path, size_t i);
/* Resolve `rel` against the directory of the YAML file (absolute paths kept). */
int ycfg_resolve_path(const struct ycfg *y, const char *rel, char *buf, size_t len);

/* The name in names[] (NULL-terminated) closest to word by edit distance,
 * if near enough to look like a typo (1 edit for words up to 3 letters, 2 up
 * to 8, else 3), else NULL. Key suggestions here; govctl's command names. */
const char *ycfg_closest(const char *word, const char *const *names);
/* The messages ycfg writes, for checks made after the document is gone
 * (a policy's controller parameters are bound later): the unit a key's
 * suffix names (" MHz" for _mhz, "" for none), "X is out of range; allowed
 * lo..hi UNIT", and "unknown key 'x' (did you mean 'y'?); allowed: ...". */
const char *ycfg_key_unit(const char *key);
void ycfg_format_range(char *out, size_t len, const char *text, double min, double max,
		       const char *unit);
void ycfg_format_unknown_key(char *out, size_t len, const char *name, const char *const *allowed);

#endif
