/* The decision log as a size-rotated file: a stdio stream (fopencookie) the
 * governor writes JSON lines to, flushed per line, that moves to path.1,
 * path.2 ... path.keep once it passes max_bytes. Rotation happens only
 * between lines, so every file holds whole lines, and each new file starts
 * with the last header record seen (a file read alone still says which
 * policy and device its decisions belong to). After kill -9 the file is
 * valid up to its last complete line: a line reaches the kernel in one
 * write(2) when it is complete. */
#ifndef GOVD_GOVERNOR_LOGROT_H
#define GOVD_GOVERNOR_LOGROT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Lines longer than this reach the kernel in more than one write. */
#define LOGROT_LINE_MAX (64 * 1024)

struct logrot_cfg {
	const char *path;
	uint64_t max_bytes; /* 0: never rotate */
	unsigned keep;      /* rotated files kept besides the live one; 0: truncate on rotation */
	const char *header_prefix; /* lines starting with it are repeated in new files; NULL: none */
	/* gzip each rotated file (path.1 -> path.1.gz) in a child `gzip`, so the
	 * writer never waits for the compression; path.N.gz shift like path.N. */
	bool compress;
};

struct logrot;

/* Opens (appends to) cfg->path, mode 0640. 0 or -errno. */
int logrot_open(struct logrot **out, const struct logrot_cfg *cfg);
/* The stream to write; owned by l (do not fclose). */
FILE *logrot_file(struct logrot *l);
uint64_t logrot_rotations(const struct logrot *l);
/* Write errors since open. A failed write (disk full) never leaves a partial
 * line: the file is cut back to its last complete line, the record is
 * dropped whole (counted in logrot_dropped; the stream sees success, so it
 * does not retry it after the cut) and the next one starts on a clean line.
 * A rotation that fails keeps appending to the same file without a new
 * header and is retried after a growing backoff. */
uint64_t logrot_errors(const struct logrot *l);
/* True while the latest write failed (a failing episode); false again after
 * a write that succeeded. */
bool logrot_failing(const struct logrot *l);
uint64_t logrot_dropped(const struct logrot *l);
/* The latest write error (-errno), 0 when none. */
int logrot_last_error(const struct logrot *l);
/* Flushes, closes. 0 or the first -errno seen. */
int logrot_close(struct logrot *l);
/* path.(keep-1) -> path.keep, ..., path -> path.1 (the oldest is replaced);
 * path.N.gz shift alongside (path.keep and path.keep.gz both go first);
 * keep 0 removes path. Missing files are skipped. 0 or -errno. */
int logrot_shift(const char *path, unsigned keep);

#endif
