/* Ops tables of the backends built into this binary; hal.c's registry is the
 * only user. A backend compiled out has no symbol here. */
#ifndef GOVD_HAL_BACKENDS_H
#define GOVD_HAL_BACKENDS_H
#include "hal/hal.h"

extern const struct hal_ops hal_sim_ops;

#endif
