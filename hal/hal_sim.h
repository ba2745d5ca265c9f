/* The sim backend's extras: a virtual clock over the plant, so govctl sim runs
 * the same governor loop as govd (common/clock.h). */
#ifndef GOVD_HAL_SIM_H
#define GOVD_HAL_SIM_H
#include "common/clock.h"
#include "hal/hal.h"

struct plant;

/* now_ms is plant time; wait_until(t) advances the plant to t (returns
 * -EHOSTDOWN once the plant has shut down: the run is over, see
 * plant->fail_reason). -EINVAL when dev is not a sim device. The clock is
 * valid until hal_close(dev). */
int hal_sim_clock(struct hal_dev *dev, struct govd_clock *out);
/* The plant behind a sim device (NULL when dev is not sim). */
struct plant *hal_sim_plant(struct hal_dev *dev);

#endif
