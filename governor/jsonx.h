/* jansson helpers shared by the decision log, the sim summary and govctl. */
#ifndef GOVD_GOVERNOR_JSONX_H
#define GOVD_GOVERNOR_JSONX_H
#include <jansson.h>
#include <math.h>

/* JSON has no NaN/inf: unknown values are null. */
static inline json_t *jsonx_real(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

#endif
