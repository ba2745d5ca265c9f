/* Crash safety: the original settings of every device, recorded in a state
 * file before govd's first write and removed after a clean restore. A state
 * file found at start (or by `govctl restore`) means a run ended without
 * restoring: its devices are put back from the record.
 *
 * Format (JSON, docs/daemon.md): {"format":"govd-state/1","govd_version",
 * "pid","config","devices":[{"name","backend","options":{k:v},"original":
 * {...}}]}. "original" is the backend's get_original() object when it has
 * one (sysfs: a "restore" list of path/value writes; nvml: power_limit_mw
 * and locked_clocks), else a generic one the daemon takes before its first
 * write: {"generic":true,"power_limit_mw":N|null,"locked_clocks":"reset",
 * "int8_slices":N}. Written crash-safe: temp file, fsync, rename, fsync of
 * the directory. */
#ifndef GOVD_GOVERNOR_STATEFILE_H
#define GOVD_GOVERNOR_STATEFILE_H
#include <stddef.h>

#include <jansson.h>

#include "common/diag.h"
#include "governor/daemon/config.h"
#include "hal/hal.h"

#define STATEFILE_FORMAT "govd-state/1"
#define STATEFILE_MAX_BYTES (1u << 20)

/* The original settings of an open device as a JSON object (new reference)
 * in *out: get_original() when the backend has it, else the generic record
 * from one sample. 0 or -errno (diag says why). */
int statefile_original(struct hal_dev *dev, json_t **out, struct diag_list *diags);
/* The state document: one entry per device of cfg, originals[i] for
 * cfg->dev[i] (references stolen). NULL on no memory. */
json_t *statefile_build(const struct config *cfg, json_t *const *originals);
/* Atomic replace of path by doc, mode 0600. 0 or -errno. */
int statefile_write(const char *path, const json_t *doc);
/* -ENOENT when absent (the normal case); -EINVAL with a diag when it does
 * not parse or lacks the format. Only a trusted file is read
 * (fsafe_trusted_file: a regular file owned by this user or root, not
 * writable by group/others, in such a directory): its restore entries
 * direct root writes. A directory or FIFO is a clear error, not a parse
 * error. */
int statefile_read(const char *path, json_t **out, struct diag_list *diags);
/* unlink + fsync of the directory; absent is fine. */
int statefile_remove(const char *path);

struct statefile_result {
	size_t devices, restored, failed;
};
/* Puts every device of doc back to its original settings: replays a
 * "restore" list, else reopens the device (backend + options) and writes
 * power limit, clocks and precision. With config (govd's start, govctl
 * restore --config) each entry must name a device of the config with the
 * same backend, and the config's options are used; without one (govctl
 * restore --state) the recorded options are. A replayed write goes only to
 * a path the backend itself records for that device. Every failure is a
 * diag naming the device; the others are still restored. 0 when all were
 * restored, else -EIO. */
int statefile_restore(const json_t *doc, const struct config *config, struct statefile_result *res,
		      struct diag_list *diags);

/* One writer per device: an exclusive flock on path + ".lock" (created
 * O_NOFOLLOW, mode 0600, holding the pid), taken before the state file is
 * read. *fd to keep open while running; -EBUSY with *holder the live
 * instance's pid (a diag names it). */
int statefile_lock(const char *path, int *fd, long *holder, struct diag_list *diags);
void statefile_unlock(int fd);

#endif
