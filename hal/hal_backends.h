/* Ops tables of the backends built into this binary; the registry beside it
 * (hal_backends.c) is their only user. A backend compiled out has no symbol
 * here. */
#ifndef GOVD_HAL_BACKENDS_H
#define GOVD_HAL_BACKENDS_H
#include "hal/hal.h"

extern const struct hal_ops hal_sim_ops;
extern const struct hal_ops hal_serving_ops; /* always built (libcurl, jansson) */
#if GOVD_WITH_SYSFS
extern const struct hal_ops hal_sysfs_ops;
#endif
#if GOVD_WITH_NVML
extern const struct hal_ops hal_nvml_ops;
#endif
#if GOVD_WITH_MODBUS
extern const struct hal_ops hal_modbus_ops;
#endif
#if GOVD_WITH_GPIOD
extern const struct hal_ops hal_gpio_ops;
#endif

struct json_t;
/* get_original's output: obj (a jansson value, its reference taken; NULL
 * when building it failed) as compact JSON into out[len], NUL terminated.
 * 0, -ENOSPC (out short: out = ""), -EINVAL (obj NULL: json_pack refused a
 * string that is not UTF-8, or no memory). */
int hal_json_out(struct json_t *obj, char *out, size_t len);

#endif
