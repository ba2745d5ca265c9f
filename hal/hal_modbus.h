/* Modbus power-meter backend (libmodbus, TCP or RTU). A sample-only device:
 * power and energy on one rail per register map entry, no set_* ops.
 * Options and the register-map format: docs/backends-modbus-gpio.md. */
#ifndef GOVD_HAL_MODBUS_H
#define GOVD_HAL_MODBUS_H
#include <stdint.h>

#include "hal/hal.h"
#include "hal/modbus_regmap.h"

#if GOVD_WITH_MODBUS
extern const struct hal_ops hal_modbus_ops;
#endif

/* Link counters since open, for probes, logs and tests. */
struct hal_modbus_stats {
	uint64_t reads_ok;        /* register reads that returned data */
	uint64_t reads_failed;    /* timeouts, disconnects, exception responses */
	uint64_t rejected;        /* values read but implausible (NaN, negative, too large) */
	uint64_t connects;        /* connect attempts, first one included */
	uint64_t connect_failures;
	uint64_t budget_skips;    /* reads left out because the period budget ran out */
	bool connected;
	int last_errno;           /* of the last failure, 0 if none */
};

/* Auxiliary quantities (voltage, current, frequency) in milli-units (mV, mA,
 * mHz); -ENOENT if the map does not read it. Power and energy come through
 * hal_sample. Only valid on a device opened with hal_modbus_ops. */
int hal_modbus_aux(struct hal_dev *dev, enum mb_quantity q, struct hal_value *out);
int hal_modbus_stats(struct hal_dev *dev, struct hal_modbus_stats *out);

#endif
