/* A device seen through another: every device op of the view forwards to
 * the device it wraps (inner), NULL where inner has none, so hal_can_*()
 * of the view are inner's; the view's owner then replaces the ops it does
 * itself. Two owners: the daemon's dry run (writes that succeed without
 * reaching the hardware, governor/daemon/daemon.c) and the serving
 * backend's power side (sample, limits, clocks and power of the power
 * backend; serving, quality and precision the server's:
 * hal/serving_power.c).
 *
 * The view's priv points at a struct whose first member is its struct
 * hal_fwd (or at the hal_fwd itself): a forwarder finds inner through it
 * whatever else the owner keeps there. */
#ifndef GOVD_HAL_FWD_H
#define GOVD_HAL_FWD_H

#include "hal/hal.h"

struct hal_fwd {
	struct hal_ops ops; /* the view's table */
	struct hal_dev *inner;
};

/* f->ops: a forwarder for each device op inner offers; the lifecycle
 * (open, close) none: inner is opened and closed by the owner. name,
 * check_options and expand are inner's (they take no device). */
void hal_fwd_init(struct hal_fwd *f, struct hal_dev *inner);
/* The device a view wraps. */
struct hal_dev *hal_fwd_inner(const struct hal_dev *view);

#endif
