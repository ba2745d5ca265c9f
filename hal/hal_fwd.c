#include "hal/hal_fwd.h"

#include <stddef.h>

struct hal_dev *hal_fwd_inner(const struct hal_dev *view)
{
	return ((const struct hal_fwd *)view->priv)->inner;
}

static int fwd_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->get_limits(in, out);
}

static int fwd_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->sample(in, out);
}

static int fwd_set_clock_range(struct hal_dev *dev, uint32_t min_khz, uint32_t max_khz)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->set_clock_range(in, min_khz, max_khz);
}

static int fwd_reset_clocks(struct hal_dev *dev)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->reset_clocks(in);
}

static int fwd_set_power_limit(struct hal_dev *dev, uint32_t limit_mw)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->set_power_limit(in, limit_mw);
}

static int fwd_read_serving(struct hal_dev *dev, struct hal_serving *out)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->read_serving(in, out);
}

static int fwd_read_quality(struct hal_dev *dev, struct hal_quality *out)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->read_quality(in, out);
}

static int fwd_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->set_precision(in, int8_frac, n_slices);
}

static int fwd_set_low_mode(struct hal_dev *dev, const uint8_t *mode, size_t n_slices)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->set_low_mode(in, mode, n_slices);
}

static int fwd_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->set_shadow_rate(in, rate, n_slices);
}

static int fwd_get_original(struct hal_dev *dev, char *json, size_t len)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->get_original(in, json, len);
}

static const char *fwd_last_error(struct hal_dev *dev)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->last_error(in);
}

static int fwd_alert_fd(struct hal_dev *dev)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->alert_fd(in);
}

static int fwd_alert_read(struct hal_dev *dev, struct hal_alert *ev)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->alert_read(in, ev);
}

static int fwd_set_brake(struct hal_dev *dev, bool on)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->set_brake(in, on);
}

static int fwd_adopt_original(struct hal_dev *dev, const char *json)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->adopt_original(in, json);
}

static int fwd_restore(struct hal_dev *dev)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->restore(in);
}

static size_t fwd_writer_ids(struct hal_dev *dev, char (*ids)[HAL_ID_LEN], size_t max)
{
	struct hal_dev *in = hal_fwd_inner(dev);
	return in->ops->writer_ids(in, ids, max);
}

#define FWD(op) (io->op ? fwd_##op : NULL)

void hal_fwd_init(struct hal_fwd *f, struct hal_dev *inner)
{
	const struct hal_ops *io = inner->ops;
	f->inner = inner;
	f->ops = (struct hal_ops){
		.name = io->name,
		.check_options = io->check_options,
		.expand = io->expand,
		.get_limits = FWD(get_limits),
		.sample = FWD(sample),
		.set_clock_range = FWD(set_clock_range),
		.reset_clocks = FWD(reset_clocks),
		.set_power_limit = FWD(set_power_limit),
		.read_serving = FWD(read_serving),
		.read_quality = FWD(read_quality),
		.set_precision = FWD(set_precision),
		.set_low_mode = FWD(set_low_mode),
		.set_shadow_rate = FWD(set_shadow_rate),
		.get_original = FWD(get_original),
		.last_error = FWD(last_error),
		.alert_fd = FWD(alert_fd),
		.alert_read = FWD(alert_read),
		.set_brake = FWD(set_brake),
		.adopt_original = FWD(adopt_original),
		.restore = FWD(restore),
		.writer_ids = FWD(writer_ids),
	};
}
