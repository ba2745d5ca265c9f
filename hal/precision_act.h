/* Precision actuators: hand the inference server a JSON document with the
 * INT8 share per slice and, where govd asks for more evidence, the shadow
 * evaluation rate per slice,
 *   {"generation": N, "slices": {"code": 0.5, ...}, "updated_ms": T,
 *    "shadow_rate": {"code": 0.25}}
 * (a slice not in shadow_rate, or a document without it: the server's own
 * rate)
 * by atomic file replace, HTTP POST or a hook on stdin. Every document
 * carries a new generation so the server can report which one it applied.
 * Format and semantics in docs/serving-integration.md. */
#ifndef GOVD_HAL_PRECISION_ACT_H
#define GOVD_HAL_PRECISION_ACT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pact_kind { PACT_NONE, PACT_FILE, PACT_HTTP, PACT_EXEC };

struct pact_cfg {
	enum pact_kind kind;
	const char *target;  /* file path, URL, or shell command (run with /bin/sh -c) */
	uint32_t timeout_ms; /* http: all tries together; exec: the whole run */
	unsigned retries;    /* http: extra tries after a failed first one, within timeout_ms */
};

struct pact {
	enum pact_kind kind;
	char *target;
	uint32_t timeout_ms;
	unsigned retries;
	uint64_t generation; /* of the last document built */
	void *curl;          /* http: reused easy handle */
	char err[192];       /* why the last apply failed */
};

/* Parses "file" | "http" | "exec" | "none". -EINVAL otherwise. */
int pact_kind_parse(const char *s, enum pact_kind *out);
/* file: continues after the generation found in an existing document. */
int pact_init(struct pact *a, const struct pact_cfg *cfg);
void pact_fini(struct pact *a);
/* The document for generation gen (malloc'd, NUL terminated, caller frees).
 * low_mode: per slice, enum hal_low_mode (what its share is served in); NULL
 * or INT8 everywhere: the document carries none. shadow: per slice, > 0
 * asks for that rate; NULL or <= 0: not asked. */
char *pact_document(uint64_t gen, const char *const *names, const double *frac,
		    const uint8_t *low_mode,
		    const double *shadow, size_t n, uint64_t updated_ms);
/* Builds the next generation and hands it over. 0 or -errno (a->err says
 * why): -ETIMEDOUT (http/exec timeout, the hook is killed), -EIO (hook exit
 * status, HTTP status), -ECONNREFUSED, or the file system's errno. */
int pact_apply(struct pact *a, const char *const *names, const double *frac,
	       const uint8_t *low_mode,
	       const double *shadow, size_t n, uint64_t updated_ms);
/* Reads an applied generation from a JSON document: field is a dotted path
 * ("generation", "precision.generation"). 0, -EBADMSG, -ENOENT. */
int pact_parse_applied(const char *buf, size_t len, const char *field, uint64_t *gen);
/* The same from a file of at most 1 MiB: also the file's -errno, -EFBIG. */
int pact_read_applied_file(const char *path, const char *field, uint64_t *gen);

#endif
