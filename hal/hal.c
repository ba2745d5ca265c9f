/* What every backend and caller shares: closing a device, the fault
 * collector. The registry and hal_open are in hal_backends.c. */
#include "hal/hal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const hal_low_mode_names[HAL_LOW_N + 1] = { "int8", "fp8", NULL };

void hal_close(struct hal_dev *dev)
{
	if (!dev->ops)
		return;
	if (dev->ops->close)
		dev->ops->close(dev);
	dev->ops = NULL;
	dev->priv = NULL;
}

void hal_fault(struct hal_faults *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	f->n++;
}

void hal_faults_put(const struct hal_faults *f, struct hal_sample *out)
{
	out->fault_count = f->n;
	memcpy(out->fault, f->msg, sizeof(out->fault));
}
