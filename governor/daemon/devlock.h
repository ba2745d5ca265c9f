/* One writer per device, machine-wide: each name a device writes (its
 * backend's writer_ids: "gpu:<UUID>", "sysfs:<device folder>",
 * "haproxy:<socket>") is held as an abstract unix socket bound in this
 * network namespace, released by the kernel when the holder exits however
 * it exits (no stale lock files). A second govd on the same device, under
 * any state file or config, finds the name taken. */
#ifndef GOVD_GOVERNOR_DEVLOCK_H
#define GOVD_GOVERNOR_DEVLOCK_H
#include <stddef.h>

/* Takes the lock for id: the fd to keep open for as long as govd writes,
 * or -EBUSY (another process holds it; err says so) or another -errno. */
int devlock_take(const char *id, char *err, size_t len);

#endif
